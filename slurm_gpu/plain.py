# SPDX-License-Identifier: Apache-2.0
"""Plain record classes that are cheap to declare: every gpusub run builds each of them at start-up.

``record`` / ``Record``: a frozen dataclass (``dataclass_transform``: type checkers see the generated
``__init__`` and the frozen fields) whose ``__init__``, ``__eq__``, ``__hash__``, ``__repr__``,
``__setattr__`` and ``__delattr__`` are written once here instead of generated (compiled) for each
class: ``dataclass(frozen=True)`` costs about 0.5 ms a class, the policy model alone about 5 ms.

``NamedTuple``: for the type checker ``typing.NamedTuple`` itself; at run time a base that builds the
same ``collections.namedtuple`` class (fields, defaults, methods, ``__annotations__``) without
``typing``'s check of each annotation, which under ``from __future__ import annotations`` compiles
every annotation string into a ``ForwardRef`` (about 0.13 ms a class). ``__annotations__`` keeps the
strings; ``typing.get_type_hints`` resolves them as before.
"""

from __future__ import annotations

import collections
from dataclasses import MISSING, FrozenInstanceError, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, dataclass_transform

__all__ = ["NamedTuple", "Record", "record", "blake2b"]

try:  # hashlib's BLAKE2, without hashlib's import of OpenSSL (about 2.5 ms of every gpusub start)
    from _blake2 import blake2b
except ImportError:  # another Python implementation
    from hashlib import blake2b

R = TypeVar("R", bound=type)


class Record:
    """Base of a record class: a frozen dataclass whose ``__init__``, ``__eq__``, ``__hash__``,
    ``__repr__``, ``__setattr__`` and ``__delattr__`` are shared here, with the semantics of the ones
    ``dataclass(frozen=True)`` generates (every field in order, positional or by keyword, defaults and
    default factories, then ``__post_init__`` where the class has one; equal only to the same class,
    over the fields of ``compare=True``, the hash likewise; ``field(repr=...)`` and ``hash=`` are not read;
    ``FrozenInstanceError`` on assignment). Declare a class as ``@record class C(Record):`` with a
    docstring (``dataclass`` would otherwise build one with ``inspect.signature``)."""

    __slots__ = ()
    _specs: ClassVar[dict[type, tuple[tuple[str, Any, Any], ...]]] = {}  # (name, default, factory) per field
    _post: ClassVar[dict[type, bool]] = {}  # whether the class has __post_init__
    _compared: ClassVar[dict[type, tuple[str, ...]]] = {}  # the fields __eq__ and __hash__ use (compare=True)

    def _spec(self) -> tuple[tuple[str, Any, Any], ...]:
        spec = Record._specs.get(type(self))
        if spec is None:
            spec = Record._specs[type(self)] = tuple(
                (f.name, f.default, f.default_factory) for f in fields(self))  # type: ignore[arg-type]
            Record._post[type(self)] = hasattr(type(self), "__post_init__")
            Record._compared[type(self)] = tuple(f.name for f in fields(self) if f.compare)  # type: ignore[arg-type]
        return spec

    def __init__(self, *args: object, **kwargs: object) -> None:
        spec, name = self._spec(), type(self).__qualname__
        if len(args) > len(spec):
            raise TypeError(f"{name}() takes {len(spec)} arguments but {len(args)} were given")
        for i, (key, default, factory) in enumerate(spec):
            if i < len(args):
                if key in kwargs:
                    raise TypeError(f"{name}() got multiple values for argument {key!r}")
                value = args[i]
            elif key in kwargs:
                value = kwargs.pop(key)
            elif default is not MISSING:
                value = default
            elif factory is not MISSING:
                value = factory()
            else:
                raise TypeError(f"{name}() missing required argument: {key!r}")
            object.__setattr__(self, key, value)
        if kwargs:
            raise TypeError(f"{name}() got an unexpected keyword argument {next(iter(kwargs))!r}")
        if Record._post[type(self)]:
            self.__post_init__()  # type: ignore[attr-defined]

    def _values(self) -> tuple[Any, ...]:
        """The compared fields' values (``field(compare=False)`` is left out of ``==`` and the hash)."""
        self._spec()
        return tuple(getattr(self, key) for key in Record._compared[type(self)])

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            assert isinstance(other, Record)
            return self._values() == other._values()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{key}={getattr(self, key)!r}" for key, _, _ in self._spec())
        return f"{type(self).__qualname__}({shown})"

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: R) -> R:
    """A record class (``dataclasses.fields`` and ``replace`` work) whose methods come from :class:`Record`."""
    return dataclass(init=False, repr=False, eq=False)(cls)  # type: ignore[return-value]


if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    _PROHIBITED = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults",
                             "_make", "_replace", "_asdict", "_source"})
    _SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})

    class _NamedTupleMeta(type):
        def __new__(mcls, typename: str, bases: tuple[type, ...], ns: dict[str, Any]) -> type:
            if not bases:  # the NamedTuple base itself
                return super().__new__(mcls, typename, bases, ns)
            if bases != (NamedTuple,):
                raise TypeError("a NamedTuple class can only inherit from NamedTuple")
            types = dict(ns.get("__annotations__", {}))
            default_names: list[str] = []
            for name in types:
                if name in ns:
                    default_names.append(name)
                elif default_names:
                    raise TypeError(f"Non-default namedtuple field {name} cannot follow default field(s) "
                                    f"{', '.join(default_names)}")
            cls = collections.namedtuple(typename, list(types), defaults=[ns[n] for n in default_names],
                                         module=ns["__module__"])
            cls.__annotations__ = cls.__new__.__annotations__ = types
            for key, value in ns.items():
                if key in _PROHIBITED:
                    raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
                if key not in _SPECIAL and key not in cls._fields:
                    setattr(cls, key, value)
            return cls

    class NamedTuple(metaclass=_NamedTupleMeta):
        """Base of a record class: ``class Point(NamedTuple): x: int; y: int = 0``."""
