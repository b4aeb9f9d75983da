# SPDX-License-Identifier: Apache-2.0
"""The one type of JSON-shaped data (what json.dumps takes and json.loads returns), so that public
signatures say "JSON" instead of ``Any``. Nested values are read-only views (``Mapping``, ``Sequence``:
covariant, so a ``list[str]`` is a JSON value); the top-level object is a mutable ``dict``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

JsonValue: TypeAlias = "Mapping[str, JsonValue] | Sequence[JsonValue] | str | int | float | bool | None"
JsonObject: TypeAlias = "dict[str, JsonValue]"


MAX_DEPTH = 64  # far deeper than any record of ours; json itself has no fixed bound from Python 3.13 on


def nested_deeper_than(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON text nests arrays/objects deeper than ``limit`` (brackets inside strings do not
    count). The same answer on every Python, where ``json.loads`` may recurse, raise RecursionError, or
    (newer releases) build the whole structure. Cheap for ordinary records: only a text with more than
    ``limit`` opening brackets is scanned."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return True
        elif ch in "]}":
            depth -= 1
    return False


def json_object(v: JsonValue) -> Mapping[str, JsonValue]:
    """A JSON object, or an empty one for anything else (a member that is missing or of another shape)."""
    return v if isinstance(v, Mapping) else {}


def json_number(v: JsonValue) -> int | float:
    """A JSON number (anything else is the TypeError that arithmetic on it would raise)."""
    if isinstance(v, (int, float)):
        return v
    raise TypeError(f"not a number: {v!r}")


def json_at(v: JsonValue, path: Sequence[str]) -> JsonValue:
    """The member at ``path`` (None below anything but an object)."""
    for k in path:
        v = json_object(v).get(k)
    return v

