# SPDX-License-Identifier: Apache-2.0
"""The one type of JSON-shaped data (what json.dumps takes and json.loads returns), so that public
signatures say "JSON" instead of ``Any``. Nested values are read-only views (``Mapping``, ``Sequence``:
covariant, so a ``list[str]`` is a JSON value); the top-level object is a mutable ``dict``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

JsonValue: TypeAlias = "Mapping[str, JsonValue] | Sequence[JsonValue] | str | int | float | bool | None"
JsonObject: TypeAlias = "dict[str, JsonValue]"
