# SPDX-License-Identifier: Apache-2.0
"""Slurm's ``--constraint`` language (sbatch(1) "-C, --constraint"), pure: parse it and ask whether a set
of nodes, each with its features, can serve it.

Grammar, as slurmctld reads it (src/slurmctld/job_mgr.c build_feature_list): features joined by ``&``
(AND; ``,`` is read as AND too), ``|`` (OR), a count after a feature (``gpu*2``: that many nodes with it),
``[...]`` (matching OR / multiple counts: ``[rack1|rack2]``, ``[a*2&b*1]``), parentheses, with a count
after a closing parenthesis (``(knl&snc4)*4``). slurmctld evaluates left to right (no precedence of AND
over OR); so does :func:`fits`.

:func:`fits` is lenient where the rule is about counts of nodes: a counted term holds when some node has
it (22.05's ``sbatch --test-only`` takes ``-C h100*3`` on a cluster with two h100 nodes too); a term
without counts holds when one node has every feature it needs. So it never refuses what slurmctld
would start; what it refuses (a feature no candidate node has) slurmctld refuses as well ("Invalid
feature specification" / "Requested node configuration is not available"). The Lua mirror is
``constraint_fits`` in job_submit/engine.lua.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from slurm_gpu.digits import is_digits
from slurm_gpu.plain import NamedTuple

MAX_CONSTRAINT = 1024  # characters; slurmctld's own limit is larger, but no real constraint comes near it
_OPS = "&|,()[]*"


class Term(NamedTuple):
    """One item of a constraint: a feature (``name``) or a group (``items``, with ``ops`` between them:
    ``&`` or ``|``), with its count (0: none) and whether it was written in brackets."""

    name: str | None = None
    items: tuple[Term, ...] = ()
    ops: tuple[str, ...] = ()
    times: int = 0  # the count after "*" (0: none)
    bracket: bool = False


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    word = ""
    for ch in text:
        if ch in _OPS:
            if word:
                out.append(word)
                word = ""
            out.append("&" if ch == "," else ch)
        elif ch in " \t\n\v\f\r":  # Lua's %s (the mirror's): the ASCII spaces
            raise ValueError("a constraint has no spaces")
        else:
            word += ch
    if word:
        out.append(word)
    return out


def parse_constraint(text: str) -> Term:
    """The constraint as a group of terms; ValueError when slurmctld would not read it either."""
    if not text or len(text.encode("utf-8", "surrogateescape")) > MAX_CONSTRAINT:  # bytes, as Lua counts
        raise ValueError("empty or overlong constraint")
    toks = _tokens(text)
    pos = 0

    def group(close: str | None) -> Term:
        nonlocal pos
        items: list[Term] = []
        ops: list[str] = []
        while True:
            if pos >= len(toks):
                raise ValueError("constraint ends early")
            tok = toks[pos]
            pos += 1
            if tok in ("(", "["):
                inner = group(")" if tok == "(" else "]")
                item = inner._replace(bracket=tok == "[")
            elif tok in _OPS:
                raise ValueError(f"unexpected {tok!r}")
            else:
                item = Term(name=tok)
            if pos < len(toks) and toks[pos] == "*":
                if pos + 1 >= len(toks) or not is_digits(toks[pos + 1]):
                    raise ValueError("a count after '*' is a whole number")
                item = item._replace(times=int(toks[pos + 1]))
                pos += 2
            items.append(item)
            if pos >= len(toks):
                if close is not None:
                    raise ValueError(f"missing {close!r}")
                break
            tok = toks[pos]
            if tok == close:
                pos += 1
                break
            if tok not in ("&", "|"):
                raise ValueError(f"unexpected {tok!r}")
            ops.append(tok)
            pos += 1
        return Term(items=tuple(items), ops=tuple(ops))

    return group(None)


def features_of(term: Term) -> tuple[str, ...]:
    """Every feature name the constraint names, in order, once."""
    if term.name is not None:
        return (term.name,)
    out: list[str] = []
    for item in term.items:
        out.extend(f for f in features_of(item) if f not in out)
    return tuple(out)


def has_count(term: Term) -> bool:
    """Whether a count (``*N``) appears anywhere in the term."""
    return term.times > 0 or any(has_count(i) for i in term.items)


def _fold(term: Term, value: Callable[[Term], bool]) -> bool:
    """Left to right over the group's items (``value(item) -> bool``), as slurmctld evaluates."""
    result = value(term.items[0])
    for op, item in zip(term.ops, term.items[1:], strict=True):
        result = (result and value(item)) if op == "&" else (result or value(item))
    return result


def holds(term: Term, features: Collection[str]) -> bool:
    """Whether one node with ``features`` satisfies the term (counts read as "this node has it")."""
    if term.name is not None:
        return term.name in features
    return _fold(term, lambda item: holds(item, features))


def fits(term: Term, nodes: Sequence[Collection[str]]) -> bool:
    """Whether nodes with these feature sets can serve the constraint (lenient on counts; see above)."""
    if not nodes:
        return False
    if not has_count(term):
        return any(holds(term, feats) for feats in nodes)
    if term.name is not None or term.times:
        return any(holds(term, feats) for feats in nodes)
    return _fold(term, lambda item: fits(item, nodes))


__all__ = ["Term", "parse_constraint", "features_of", "holds", "fits", "has_count", "MAX_CONSTRAINT"]
