# SPDX-License-Identifier: Apache-2.0
"""The value kinds of the policy schema: plain data that the model's fields carry in their metadata.

``model.py`` declares every field once, as ``field(default, metadata=yaml("key", Kind(...), "doc"))``.
Two readers walk that declaration: :mod:`slurm_gpu.policy.fields` turns each kind into a converter
(validation, with its "allowed ..." text) and :mod:`slurm_gpu.policy.schema` into JSON Schema. This
module imports nothing heavy and its classes are plain (no dataclass code generation), so the model
stays cheap to import.
"""

from __future__ import annotations

from typing import Any


class Kind:
    """Base of every kind: a plain value object (slots, keyword or positional arguments)."""

    __slots__: tuple[str, ...] = ()
    _defaults: tuple[Any, ...] = ()

    def __init__(self, *args: object, **kwargs: object) -> None:
        names = self.__slots__
        values = list(args) + list(self._defaults[len(args) - len(names):] if len(args) < len(names) else ())
        for name, value in zip(names, values, strict=False):  # values may be short: kwargs fill in
            object.__setattr__(self, name, kwargs.pop(name, value))
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unknown {sorted(kwargs)}")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    def __hash__(self) -> int:
        return hash((type(self), *(getattr(self, n) for n in self.__slots__)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"


class Name(Kind):
    """A name of letters, digits, ``_``, ``-``, ``.`` (not starting with a punctuation mark)."""

    __slots__ = ()


class Text(Kind):
    __slots__ = ()


class Bool(Kind):
    __slots__ = ()


class Int(Kind):
    """An integer >= lo (and <= hi when given)."""

    __slots__ = ("lo", "hi")
    _defaults = (0, None)
    lo: int
    hi: int | None


class Number(Kind):
    """A finite number > gt (and <= le when given); stored as float."""

    __slots__ = ("gt", "le")
    _defaults = (0.0, None)
    gt: float
    le: float | None


class Duration(Kind):
    """A duration (units.parse_time_seconds); a bare number is minutes. ``unit``: "min" or "s"."""

    __slots__ = ("unit",)
    _defaults = ("min",)
    unit: str


class Limit(Kind):
    """A time limit in minutes, or UNLIMITED/INFINITE (None)."""

    __slots__ = ()


class MemMB(Kind):
    """A memory size > 0 in MB (units.parse_mem_mb); a bare number is MB."""

    __slots__ = ()


class Enum(Kind):
    """One of ``values``; ``aliases`` are extra spellings with the value they stand for."""

    __slots__ = ("values", "aliases")
    _defaults = ((), ())
    values: tuple[str, ...]
    aliases: tuple[tuple[str, Any], ...]

    @property
    def spellings(self) -> tuple[str, ...]:
        return self.values + tuple(a for a, _ in self.aliases)


class CpusPerGpu(Kind):
    """An integer >= 1 or the word ``topology``."""

    __slots__ = ()


class Hostlist(Kind):
    """A Slurm hostlist; converts to (text as written, expanded names)."""

    __slots__ = ()


class MigProfile(Kind):
    __slots__ = ()


class Option(Kind):
    """An sbatch long option, ``--name`` or ``--name=value``."""

    __slots__ = ()


class ListOf(Kind):
    """A list of ``item``; ``item_text`` names the items in messages ("allowed a list of names")."""

    __slots__ = ("item", "item_text")
    _defaults = (None, "")
    item: Kind
    item_text: str


class Nested(Kind):
    """A mapping converted by the fields of the dataclass ``cls``."""

    __slots__ = ("cls",)
    _defaults = (None,)
    cls: type


class Section(Kind):
    """A top-level list whose entries are mappings converted by ``cls``."""

    __slots__ = ("cls",)
    _defaults = (None,)
    cls: type


class Const(Kind):
    __slots__ = ("value",)
    _defaults = (None,)
    value: Any


class Paths(Kind):
    """One path or a list of paths (``include``)."""

    __slots__ = ()


class Messages(Kind):
    """A mapping of message name to text with ``{placeholders}``."""

    __slots__ = ()


def yaml(key: str, kind: Kind, doc: str = "") -> dict[str, object]:
    """Field metadata: the YAML key, its kind and a one-line description."""
    return {"yaml": key, "kind": kind, "doc": doc}
