# SPDX-License-Identifier: Apache-2.0
"""The value kinds of the policy schema: plain data that the model's fields carry in their metadata.

``model.py`` declares every field once, as ``field(default, metadata=yaml("key", Kind(...), "doc"))``.
Two readers walk that declaration: :mod:`slurm_gpu.policy.fields` turns each kind into a converter
(validation, with its "allowed ..." text) and :mod:`slurm_gpu.policy.schema` into JSON Schema. This
module imports nothing heavy and its classes are :func:`slurm_gpu.plain.record` records (no dataclass
code generation), so the model stays cheap to import.
"""

from __future__ import annotations

from typing import Any

from slurm_gpu.plain import Record, record


@record
class Kind(Record):
    """Base of every kind: a plain value object (a :func:`slurm_gpu.plain.record`: frozen, compared by
    class and fields, keyword or positional arguments)."""


@record
class Name(Kind):
    """A name of letters, digits, ``_``, ``-``, ``.`` (not starting with a punctuation mark)."""


@record
class Text(Kind):
    """A kind without parameters."""


@record
class Bool(Kind):
    """A kind without parameters."""


@record
class Int(Kind):
    """An integer >= lo (and <= hi when given)."""

    lo: int = 0
    hi: int | None = None


@record
class Number(Kind):
    """A finite number > gt (and <= le when given); stored as float."""

    gt: float = 0.0
    le: float | None = None


@record
class Duration(Kind):
    """A duration (units.parse_time_seconds); a bare number is minutes. ``unit``: "min" or "s"."""

    unit: str = "min"


@record
class Limit(Kind):
    """A time limit in minutes, or UNLIMITED/INFINITE (None)."""


@record
class MemMB(Kind):
    """A memory size > 0 in MB (units.parse_mem_mb); a bare number is MB."""


@record
class Enum(Kind):
    """One of ``values``; ``aliases`` are extra spellings with the value they stand for."""

    values: tuple[str, ...] = ()
    aliases: tuple[tuple[str, Any], ...] = ()

    @property
    def spellings(self) -> tuple[str, ...]:
        return self.values + tuple(a for a, _ in self.aliases)


@record
class CpusPerGpu(Kind):
    """An integer >= 1 or the word ``topology``."""


@record
class Hostlist(Kind):
    """A Slurm hostlist; converts to (text as written, expanded names)."""


@record
class MigProfile(Kind):
    """A kind without parameters."""


@record
class Option(Kind):
    """An sbatch long option, ``--name`` or ``--name=value``."""


@record
class ListOf(Kind):
    """A list of ``item``; ``item_text`` names the items in messages ("allowed a list of names")."""

    item: Kind
    item_text: str = ""


@record
class Nested(Kind):
    """A mapping converted by the fields of the dataclass ``cls``."""

    cls: type


@record
class Section(Kind):
    """A list whose entries are mappings converted by ``cls``: a top-level section, or a list inside a
    nested mapping (``fabric.switches``), whose entries the validator keeps with their file positions."""

    cls: type


@record
class Const(Kind):
    """Exactly ``value``."""

    value: Any


@record
class Paths(Kind):
    """One path or a list of paths (``include``)."""


@record
class Messages(Kind):
    """A mapping of message name to text with ``{placeholders}``."""


def yaml(key: str, kind: Kind, doc: str = "") -> dict[str, object]:
    """Field metadata: the YAML key, its kind and a one-line description."""
    return {"yaml": key, "kind": kind, "doc": doc}
