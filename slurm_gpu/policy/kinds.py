# SPDX-License-Identifier: Apache-2.0
"""The value kinds of the policy schema: plain data that the model's fields carry in their metadata.

``model.py`` declares every field once, as ``field(default, metadata=yaml("key", Kind(...), "doc"))``.
Two readers walk that declaration: :mod:`slurm_gpu.policy.fields` turns each kind into a converter
(validation, with its "allowed ..." text) and :mod:`slurm_gpu.policy.schema` into JSON Schema. This
module imports nothing heavy, so the model stays cheap to import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class Kind:
    """Base of every kind."""


@dataclass(frozen=True)
class Name(Kind):
    """A name of letters, digits, ``_``, ``-``, ``.`` (not starting with a punctuation mark)."""


@dataclass(frozen=True)
class Text(Kind):
    pass


@dataclass(frozen=True)
class Bool(Kind):
    pass


@dataclass(frozen=True)
class Int(Kind):
    lo: int = 0
    hi: int | None = None


@dataclass(frozen=True)
class Number(Kind):
    """A finite number > gt (and <= le when given); stored as float."""

    gt: float = 0.0
    le: float | None = None


@dataclass(frozen=True)
class Duration(Kind):
    """A duration (units.parse_time_seconds); a bare number is minutes. ``unit``: "min" or "s"."""

    unit: str = "min"


@dataclass(frozen=True)
class Limit(Kind):
    """A time limit in minutes, or UNLIMITED/INFINITE (None)."""


@dataclass(frozen=True)
class MemMB(Kind):
    """A memory size > 0 in MB (units.parse_mem_mb); a bare number is MB."""


@dataclass(frozen=True)
class Enum(Kind):
    """One of ``values``; ``aliases`` are extra spellings with the value they stand for."""

    values: tuple[str, ...]
    aliases: tuple[tuple[str, Any], ...] = ()

    @property
    def spellings(self) -> tuple[str, ...]:
        return self.values + tuple(a for a, _ in self.aliases)


@dataclass(frozen=True)
class CpusPerGpu(Kind):
    """An integer >= 1 or the word ``topology``."""


@dataclass(frozen=True)
class Hostlist(Kind):
    """A Slurm hostlist; converts to (text as written, expanded names)."""


@dataclass(frozen=True)
class MigProfile(Kind):
    pass


@dataclass(frozen=True)
class Option(Kind):
    """An sbatch long option, ``--name`` or ``--name=value``."""


@dataclass(frozen=True)
class ListOf(Kind):
    item: Kind
    item_text: str  # "names", for "allowed a list of names"


@dataclass(frozen=True)
class Nested(Kind):
    """A mapping converted by the fields of the dataclass ``cls``."""

    cls: type


@dataclass(frozen=True)
class Section(Kind):
    """A top-level list whose entries are mappings converted by ``cls``."""

    cls: type


@dataclass(frozen=True)
class Const(Kind):
    value: Any


@dataclass(frozen=True)
class Paths(Kind):
    """One path or a list of paths (``include``)."""


@dataclass(frozen=True)
class Messages(Kind):
    """A mapping of message name to text with ``{placeholders}``."""


def yaml(key: str, kind: Kind, doc: str = "") -> dict[str, Any]:
    """Field metadata: the YAML key, its kind and a one-line description."""
    return {"yaml": key, "kind": kind, "doc": doc}
