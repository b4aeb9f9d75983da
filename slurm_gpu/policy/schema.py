# SPDX-License-Identifier: Apache-2.0
"""The policy's JSON Schema, generated from the model's declaration (:mod:`slurm_gpu.policy.model`).

The shipped ``slurm_gpu/schema/policy.schema.json`` is this output; regenerate it with

    python -m slurm_gpu.policy.schema --write

and a test fails while the file and the declaration disagree. The schema checks structure (keys,
types, enums, ranges, spelling of durations, sizes and MIG profiles); ``slurm-gpu policy check``
also checks cross references, uniqueness and contradictions.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import Any

from slurm_gpu import units
from slurm_gpu.policy import kinds as K
from slurm_gpu.policy.fields import NAME_RE, OPTION_PATTERN
from slurm_gpu.policy.model import DEFAULT_MESSAGES, Policy

SHIPPED = os.path.join(os.path.dirname(os.path.dirname(__file__)), "schema", "policy.schema.json")


def _any_case(word: str) -> str:
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in word)


DEFS: dict[str, Any] = {
    "name": {"type": "string", "pattern": NAME_RE.pattern},
    "duration": {"oneOf": [{"type": "integer", "minimum": 0},
                           {"type": "string", "pattern": rf"^\s*(?:{units.DURATION_PATTERN})\s*$"}]},
    "limit": {"oneOf": [{"type": "integer", "minimum": 0},
                        {"type": "string", "pattern": rf"^\s*(?:{units.DURATION_PATTERN})\s*$"},
                        {"type": "string",
                         "pattern": "^(?:" + "|".join(_any_case(w) for w in units.UNLIMITED_WORDS) + ")$"}]},
}


def _kind(kind: K.Kind) -> dict[str, Any]:
    if isinstance(kind, K.Name):
        return {"$ref": "#/$defs/name"}
    if isinstance(kind, K.Text):
        return {"type": "string"}
    if isinstance(kind, K.Bool):
        return {"type": "boolean"}
    if isinstance(kind, K.Int):
        return {"type": "integer", "minimum": kind.lo, **({"maximum": kind.hi} if kind.hi is not None else {})}
    if isinstance(kind, K.Number):
        return {"type": "number", "exclusiveMinimum": kind.gt, **({"maximum": kind.le} if kind.le is not None else {})}
    if isinstance(kind, K.Duration):
        return {"$ref": "#/$defs/duration"}
    if isinstance(kind, K.Limit):
        return {"$ref": "#/$defs/limit"}
    if isinstance(kind, K.MemMB):
        return {"oneOf": [{"type": "integer", "minimum": 1},
                          {"type": "string", "pattern": f"^{units.MEM_PATTERN}$"}]}
    if isinstance(kind, K.Enum):
        return {"enum": list(kind.spellings)}
    if isinstance(kind, K.CpusPerGpu):
        return {"oneOf": [{"type": "integer", "minimum": 1}, {"const": "topology"}]}
    if isinstance(kind, K.Hostlist):
        return {"type": "string", "minLength": 1}
    if isinstance(kind, K.MigProfile):
        return {"type": "string", "pattern": f"^{units.MIG_PROFILE_PATTERN}$"}
    if isinstance(kind, K.Option):
        return {"type": "string", "pattern": OPTION_PATTERN}
    if isinstance(kind, K.ListOf):
        return {"type": "array", "items": _kind(kind.item)}
    if isinstance(kind, (K.Nested, K.Section)):
        obj = _object(kind.cls)
        return {"type": "array", "items": obj} if isinstance(kind, K.Section) else obj
    if isinstance(kind, K.Const):
        return {"const": kind.value}
    if isinstance(kind, K.Paths):
        path = {"type": "string", "minLength": 1}
        return {"oneOf": [path, {"type": "array", "items": path}]}
    if isinstance(kind, K.Messages):
        return {"type": "object", "additionalProperties": {"type": "string"},
                "propertyNames": {"enum": list(DEFAULT_MESSAGES)}}
    raise TypeError(f"no JSON Schema for {kind!r}")


def _object(cls: type) -> dict[str, Any]:
    props, required = {}, []
    for f in dataclasses.fields(cls):
        if "kind" not in f.metadata:
            continue
        key = f.metadata["yaml"]
        schema = _kind(f.metadata["kind"])
        if f.metadata.get("doc"):
            schema = {"description": f.metadata["doc"], **schema}
        props[key] = schema
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(key)
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def policy_json_schema() -> dict[str, Any]:
    top = _object(Policy)
    top["required"] = ["version"]  # the top file's name defaults to the file name
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://slurm-gpu.example/schema/policy.schema.json",
        "title": "slurm-gpu site policy, version 1",
        "description": "Generated from slurm_gpu/policy/model.py (python -m slurm_gpu.policy.schema --write). "
                       "Structure only; cross references (names that must exist), uniqueness and "
                       "contradictions are checked by slurm-gpu policy check.",
        "$defs": DEFS,
        **top,
    }


def render() -> str:
    return json.dumps(policy_json_schema(), indent=2) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``--write``: regenerate the shipped file; ``--check``: exit 1 when it is stale; else print."""
    args = sys.argv[1:] if argv is None else argv
    text = render()
    if "--write" in args:
        with open(SHIPPED, "w", encoding="utf-8") as fh:
            fh.write(text)
        return 0
    if "--check" in args:
        with open(SHIPPED, encoding="utf-8") as fh:
            stale = fh.read() != text
        if stale:
            print(f"{SHIPPED} is stale: run python -m slurm_gpu.policy.schema --write", file=sys.stderr)
        return 1 if stale else 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
