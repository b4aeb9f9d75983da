# SPDX-License-Identifier: Apache-2.0
"""slurm_gpu.plain: the cheap record classes behave as the standard library's they stand in for.

Each case declares the same class twice, once with ``dataclass(frozen=True)`` / ``typing.NamedTuple``
(the reference) and once with ``record`` / ``plain.NamedTuple``, and compares what users can see.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import typing
from dataclasses import dataclass, field

import pytest

from slurm_gpu.plain import NamedTuple, Record, record


@dataclass(frozen=True)
class RefPoint:
    name: str
    x: int = 0
    tags: tuple[str, ...] = ()
    extra: dict[str, int] = field(default_factory=dict)


@record
class Point(Record):
    """The same fields as RefPoint."""

    name: str
    x: int = 0
    tags: tuple[str, ...] = ()
    extra: dict[str, int] = field(default_factory=dict)


@record
class Hashable(Record):
    """Hashable fields only."""

    name: str
    x: int = 0


@dataclass(frozen=True)
class RefHashable:
    name: str
    x: int = 0


@record
class WithPost(Record):
    """A class with __post_init__."""

    a: int
    b: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.b:
            object.__setattr__(self, "b", (self.a,))


CALLS: list[tuple[tuple[object, ...], dict[str, object]]] = [
    (("n",), {}), (("n", 2), {}), (("n",), {"x": 3, "tags": ("a",)}), ((), {"name": "n", "extra": {"k": 1}}),
    (("n", 1, (), {}), {}),
]
BAD_CALLS: list[tuple[tuple[object, ...], dict[str, object]]] = [
    ((), {}), (("n",), {"bogus": 1}), (("n", 1, (), {}, 5), {}), (("n",), {"name": "m"}),
]


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_record_init_repr_eq_match_the_dataclass(args, kwargs) -> None:
    ref, ours = RefPoint(*args, **kwargs), Point(*args, **kwargs)  # type: ignore[arg-type]
    assert repr(ours) == repr(ref).replace("RefPoint", "Point")
    assert dataclasses.asdict(ours) == dataclasses.asdict(ref)
    assert ours == Point(*args, **kwargs)  # type: ignore[arg-type]
    assert ours != Point("other")
    assert ours != ref  # a different class is never equal, as for dataclasses
    assert (ours == 1) is False and (ours != 1) is True


@pytest.mark.parametrize(("args", "kwargs"), BAD_CALLS)
def test_record_refuses_what_the_dataclass_refuses(args, kwargs) -> None:
    with pytest.raises(TypeError):
        RefPoint(*args, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Point(*args, **kwargs)  # type: ignore[arg-type]


def test_record_default_factory_is_fresh_each_time() -> None:
    assert Point("a").extra is not Point("a").extra


def test_record_hash_matches_the_dataclass() -> None:
    assert hash(Hashable("n", 2)) == hash(RefHashable("n", 2))
    assert len({Hashable("n", 2), Hashable("n", 2), Hashable("m")}) == 2
    with pytest.raises(TypeError):  # a dict field is unhashable in both
        hash(RefPoint("n"))
    with pytest.raises(TypeError):
        hash(Point("n"))


def test_record_is_frozen() -> None:
    p = Point("n")
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'x'"):
        p.x = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'name'"):
        del p.name  # type: ignore[misc]
    assert p.x == 0


def test_record_works_with_the_dataclasses_functions_and_copies() -> None:
    p = Point("n", 2, ("t",), {"k": 1})
    assert dataclasses.is_dataclass(Point)
    assert [f.name for f in dataclasses.fields(Point)] == [f.name for f in dataclasses.fields(RefPoint)]
    assert dataclasses.replace(p, x=5) == Point("n", 5, ("t",), {"k": 1})
    assert pickle.loads(pickle.dumps(p)) == p
    assert copy.deepcopy(p) == p and copy.copy(p) == p
    assert Point.__match_args__ == RefPoint.__match_args__


@dataclass(frozen=True)
class RefNoted:
    name: str
    notes: tuple[str, ...] = field(default=(), compare=False)


@record
class Noted(Record):
    """A field left out of == and the hash, as topology.model.Topology's notes."""

    name: str
    notes: tuple[str, ...] = field(default=(), compare=False)


def test_record_leaves_compare_false_fields_out_of_eq_and_hash() -> None:
    for cls in (RefNoted, Noted):
        a, b = cls("n", ("parsed from a paste",)), cls("n")  # type: ignore[operator]
        assert a == b and hash(a) == hash(b) and a != cls("m")  # type: ignore[operator]
    assert hash(Noted("n", ("x",))) == hash(RefNoted("n"))
    assert repr(Noted("n", ("x",))) == "Noted(name='n', notes=('x',))"


def test_record_runs_post_init() -> None:
    assert WithPost(3).b == (3,)
    assert WithPost(3, (1, 2)).b == (1, 2)


class RefRow(typing.NamedTuple):
    name: str
    short: str | None
    env: tuple[str, ...] = ()
    since: int = 0

    @property
    def upper(self) -> str:
        return self.name.upper()

    def twice(self) -> str:
        return self.name * 2


class Row(NamedTuple):
    name: str
    short: str | None
    env: tuple[str, ...] = ()
    since: int = 0

    @property
    def upper(self) -> str:
        return self.name.upper()

    def twice(self) -> str:
        return self.name * 2


def test_namedtuple_matches_typing_namedtuple() -> None:
    ref, ours = RefRow("ab", None, ("E",)), Row("ab", None, ("E",))
    assert ours == ref and tuple(ours) == tuple(ref)  # tuples compare by value, as before
    assert repr(ours) == repr(ref).replace("RefRow", "Row")
    assert Row._fields == RefRow._fields and Row._field_defaults == RefRow._field_defaults
    assert ours.upper == "AB" and ours.twice() == "abab"
    assert ours._replace(since=3) == ref._replace(since=3)
    assert ours._asdict() == ref._asdict()
    assert Row._make(["x", "y", (), 1]) == RefRow._make(["x", "y", (), 1])
    assert Row.__mro__[1:] == RefRow.__mro__[1:] == (tuple, object)
    assert Row.__module__ == RefRow.__module__ and Row.__qualname__ == "Row"
    assert typing.get_type_hints(Row) == typing.get_type_hints(RefRow)
    assert pickle.loads(pickle.dumps(ours)) == ours
    with pytest.raises(TypeError):
        Row("only-one")  # type: ignore[call-arg]


def test_namedtuple_refuses_what_typing_refuses() -> None:
    bad_order = "class Bad(NamedTuple):\n    a: int = 1\n    b: int\n"
    overwrite = "class Bad(NamedTuple):\n    a: int\n    def _asdict(self):\n        return {}\n"
    for base in (typing.NamedTuple, NamedTuple):
        with pytest.raises(TypeError):
            exec(bad_order, {"NamedTuple": base, "__name__": __name__})
        with pytest.raises(AttributeError):
            exec(overwrite, {"NamedTuple": base, "__name__": __name__})
