# SPDX-License-Identifier: Apache-2.0
"""CPU lists in Linux/Slurm range syntax (``0-15,64-79``)."""

from __future__ import annotations

from collections.abc import Iterable

from slurm_gpu.digits import ascii_int


def parse_cpulist(text: str) -> tuple[int, ...]:
    """``"0-3,8,10-11"`` -> ``(0, 1, 2, 3, 8, 10, 11)``, sorted and de-duplicated.

    Raises ValueError naming the bad item. An empty string gives an empty tuple.
    """
    out: set[int] = set()
    text = text.strip()
    if not text:
        return ()
    for item in text.split(","):
        item = item.strip()
        if not item:
            raise ValueError(f"empty item in cpu list {text!r}")
        lo_s, sep, hi_s = item.partition("-")
        lo = ascii_int(lo_s.strip())  # ASCII digits only: int() would read "٣" as 3
        hi = ascii_int(hi_s.strip()) if sep else lo
        if lo is None or hi is None:
            raise ValueError(f"bad item {item!r} in cpu list {text!r}; expected N or N-M")
        if hi < lo:
            raise ValueError(f"bad range {item!r} in cpu list {text!r}")
        out.update(range(lo, hi + 1))
    return tuple(sorted(out))


def format_cpulist(cpus: Iterable[int]) -> str:
    """``[0, 1, 2, 3, 8]`` -> ``"0-3,8"``."""
    ids = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(parts)
