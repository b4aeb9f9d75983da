# SPDX-License-Identifier: Apache-2.0
"""The parsers of ``sacct -P`` output (pure: text in, data out), beside :mod:`slurm_gpu.slurm.records`.

- :func:`parse_sacct`: the ``|``-separated rows under their header line (the last column may itself hold
  ``|``: put free text such as ``AdminComment`` last);
- :func:`sacct_seconds`: ``Elapsed``/``TotalCPU`` (``00:01.006``, ``02:03:04``, ``1-02:03:04``);
- :func:`sacct_bytes`: ``MaxRSS``/``ReqMem``/TRES ``mem`` (``15968K``, ``60G``, ``4000Mc``);
- :func:`sacct_time`: ``Submit``/``Start``/``End`` (``2026-12-01T03:27:42``) as epoch seconds (UTC);
- :func:`tres_gpus`: GPUs per type of an ``AllocTRES``/``ReqTRES`` list, in both spellings
  (``gres/gpu:h100=2,gres/gpu=2``; ``gres:gpu``), typed-only lists and MIG types included.

Texts are those the lab's 22.05.8 printed (tests/cluster/data/sacct-*); 24.11 prints the same columns.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

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
    lines = text.splitlines()
    if not lines:
        return []
    header = lines[0].split("|")
    out: list[dict[str, str]] = []
    for line in lines[1:MAX_ROWS + 1]:
        fields = line.split("|", len(header) - 1)
        if len(fields) == len(header):
            out.append(dict(zip(header, fields, strict=True)))
    return out


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


def sacct_time(text: str | None) -> float | None:
    """``2026-12-01T03:27:42`` (sacct's default format, read as UTC) -> epoch seconds; None for
    ``Unknown``, ``None`` or empty."""
    if not text or not is_digits(text[:1]):
        return None
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


__all__ = ["parse_sacct", "sacct_seconds", "sacct_bytes", "sacct_time", "tres_gpus", "tres_value", "UNTYPED",
           "MAX_ROWS"]
