# SPDX-License-Identifier: Apache-2.0
"""The Policy's plain form: :func:`from_plain` rebuilds a model dataclass from its ``dataclasses.asdict``
form after a JSON round trip. Pure; the cache that stores it is slurm_gpu/adapters/policy_cache.py."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from slurm_gpu.jsontypes import JsonValue
from slurm_gpu.policy.kinds import Nested, Section

T = TypeVar("T")


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def from_plain(cls: type[T], data: Mapping[str, JsonValue]) -> T:
    """Rebuild a model dataclass from its ``dataclasses.asdict`` form (after a JSON round trip)."""
    kwargs: dict[str, Any] = {}
    plain: Any = data
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]  # a model dataclass
        value, kind = plain[f.name], f.metadata.get("kind")
        if isinstance(kind, Section):
            kwargs[f.name] = tuple(from_plain(kind.cls, v) for v in value)
        elif isinstance(kind, Nested):
            kwargs[f.name] = from_plain(kind.cls, value)
        else:
            kwargs[f.name] = _tuples(value)
    return cls(**kwargs)


__all__ = ["from_plain"]
