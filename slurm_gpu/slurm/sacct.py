# SPDX-License-Identifier: Apache-2.0
"""The parsers of ``sacct -P`` output (pure: text in, data out), beside :mod:`slurm_gpu.slurm.records`.

- :func:`parse_sacct`: the ``|``-separated rows under their header line (the last column may itself hold
  ``|``: put free text such as ``AdminComment`` last); :func:`iter_sacct` the same, row by row, from lines
  as they come (a report's window is never held whole);
- :func:`sacct_seconds`: ``Elapsed``/``TotalCPU`` (``00:01.006``, ``02:03:04``, ``1-02:03:04``);
- :func:`sacct_bytes`: ``MaxRSS``/``ReqMem``/TRES ``mem`` (``15968K``, ``60G``, ``4000Mc``);
- :func:`sacct_time`: ``Submit``/``Start``/``End`` (``2026-12-01T03:27:42``) as epoch seconds (UTC);
- :func:`tres_gpus`: GPUs per type of an ``AllocTRES``/``ReqTRES`` list, in both spellings
  (``gres/gpu:h100=2,gres/gpu=2``; ``gres:gpu``), typed-only lists and MIG types included.

Texts are those the lab's 22.05.8 printed (tests/cluster/data/sacct-*); 24.11 prints the same columns.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from itertools import islice

from slurm_gpu.digits import is_digits
from slurm_gpu.units import UnitError, parse_time_seconds

MAX_ROWS = 2_000_000  # rows read from one sacct answer (a year of a large site's jobs)
_MEM_UNITS = {"": 1 << 20, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
_MEM_RE = re.compile(r"^([0-9]{1,15}(?:\.[0-9]{1,6})?)([KMGTP]?)[nc]?$", re.I)
_GPU_TRES_RE = re.compile(r"(?:^|,)gres[/:]gpu(?::([A-Za-z0-9_.+-]{1,64}))?=([0-9]{1,9})(?=,|$)")
UNTYPED = "gpu"  # the key of GPUs whose type sacct does not name


def parse_sacct(text: str) -> list[dict[str, str]]:
    """``sacct -P`` output with its header line -> one dict per row (header names as keys). Lines with
    fewer fields than the header are skipped; extra ``|`` stay in the last column."""
    # rows end at "\n" only: splitlines() also cuts at \r, \x1e, \x85, U+2028 ..., which free text such as
    # AdminComment may hold (docs/records.md)
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    return list(iter_sacct(lines))


def iter_sacct(lines: Iterable[str]) -> Iterator[dict[str, str]]:
    """:func:`parse_sacct` row by row: ``lines`` (the header first, each without its newline) are read as
    the rows are taken, at most :data:`MAX_ROWS` rows."""
    it = iter(lines)
    first = next(it, None)
    if first is None:
        return
    header = first.split("|")
    n = len(header)
    for line in islice(it, MAX_ROWS):
        fields = line.split("|", n - 1)
        if len(fields) == n:
            yield dict(zip(header, fields, strict=True))


def sacct_seconds(text: str | None) -> float | None:
    """``00:01.006`` -> 1.006; ``1-02:03:04`` -> 93784; None for empty, ``INVALID``, ``Unknown``."""
    if not text:
        return None
    whole, _, frac = text.strip().partition(".")
    try:
        secs = float(parse_time_seconds(whole))
        # a bare number is minutes in Slurm's grammar; sacct's shortest form is MM:SS.mmm
    except UnitError:
        return None
    if ":" not in whole:
        return None
    if frac:
        if not is_digits(frac) or len(frac) > 6:
            return None
        secs += int(frac) / 10 ** len(frac)
    return secs


def sacct_bytes(text: str | None) -> int | None:
    """``15968K`` -> bytes; a bare number is MB as in Slurm; the old per-node/per-CPU ``n``/``c`` suffix
    of ReqMem is dropped. None for empty or unreadable text."""
    if not text:
        return None
    m = _MEM_RE.match(text.strip())
    if m is None:
        return None
    return int(float(m.group(1)) * _MEM_UNITS[m.group(2).upper()])


_DAYS: dict[str, float] = {}  # "2026-12-01" -> its midnight (UTC) in epoch seconds
_ISO_RE = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})T([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9])")


def sacct_time(text: str | None) -> float | None:
    """``2026-12-01T03:27:42`` (sacct's default format, read as UTC) -> epoch seconds; None for
    ``Unknown``, ``None`` or empty."""
    if not text or not is_digits(text[:1]):
        return None
    m = _ISO_RE.fullmatch(text)
    if m is not None:  # the common form: its day's midnight (computed once a day) + the time of day
        day = _DAYS.get(m.group(1))
        if day is None:
            try:
                day = datetime.fromisoformat(m.group(1)).replace(tzinfo=UTC).timestamp()
            except ValueError:
                return None
            if len(_DAYS) < 100_000:
                _DAYS[m.group(1)] = day
        return day + (int(m.group(2)) * 3600 + int(m.group(3)) * 60 + int(m.group(4)))
    if "T24:" in text:  # Python 3.14's fromisoformat reads 24:00:00 as the next midnight; 3.11-3.13 and the fast
        return None     # form refuse it, and sacct never prints it (measured on Debian testing's 3.14)
    try:
        return datetime.fromisoformat(text.strip()).replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def tres_gpus(tres: str | None) -> dict[str, int]:
    """GPUs per type in a TRES list: ``gres/gpu:h100=2,gres/gpu=2`` -> {h100: 2};
    ``gres/gpu=3,gres/gpu:a100=2`` -> {a100: 2, gpu: 1} (the untyped rest); ``gres/gpu=1`` -> {gpu: 1}.
    The untyped total ``gres/gpu=N`` is the job's count when given; typed items are read in both
    ``gres/`` and ``gres:`` spellings."""
    if not tres:
        return {}
    total: int | None = None
    typed: dict[str, int] = {}
    for m in _GPU_TRES_RE.finditer(tres):
        if m.group(1) is None:
            total = int(m.group(2))
        else:
            typed[m.group(1)] = typed.get(m.group(1), 0) + int(m.group(2))
    out = {k: v for k, v in typed.items() if v > 0}
    rest = (total if total is not None else sum(out.values())) - sum(out.values())
    if rest > 0:
        out[UNTYPED] = rest
    return out


def tres_value(tres: str | None, key: str) -> str | None:
    """One item of a TRES list (``mem`` -> ``60G``)."""
    for item in (tres or "").split(","):
        k, sep, v = item.partition("=")
        if sep and k == key:
            return v
    return None


__all__ = ["parse_sacct", "iter_sacct", "sacct_seconds", "sacct_bytes", "sacct_time", "tres_gpus", "tres_value",
           "UNTYPED", "MAX_ROWS"]
