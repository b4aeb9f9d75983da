# SPDX-License-Identifier: Apache-2.0
"""Slurm hostlists (``node[1-3,5],gpu07``, ``rack[1-2]-n[01-03]``) <-> lists of names.

A thin adapter over the python-hostlist library (module ``hostlist``): the grammar is the library's,
this module adds bounds and one-line errors. A hostlist longer than :data:`MAX_TEXT` characters or
naming more than :data:`MAX_NAMES` hosts is refused before anything is expanded.
"""

from __future__ import annotations

import re

from slurm_gpu.digits import is_digits

MAX_TEXT = 64 * 1024
MAX_NAMES = 1_000_000
_GROUP = re.compile(r"\[([^\[\]]*)\]")


class HostlistError(ValueError):
    """A hostlist that cannot be expanded; the message is one line."""


def _split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _size(text: str) -> int:
    """An upper bound of the names ``text`` expands to (0 where the library will refuse it anyway)."""
    total = 0
    for part in _split_top(text):
        n = 1
        for group in _GROUP.findall(part):
            count = 0
            for rng in group.split(","):
                lo, sep, hi = rng.strip().partition("-")
                if is_digits(lo) and is_digits(hi) and len(lo) < 19 and len(hi) < 19:
                    count += max(0, int(hi) - int(lo)) + 1
                else:
                    count += 1
            n *= count
            if n > MAX_NAMES:
                return n
        total += n
        if total > MAX_NAMES:
            return total
    return total


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:60]) + "..."


def expand_hostlist(text: str) -> list[str]:
    """``"node[1-2],a100n1"`` -> ``["node1", "node2", "a100n1"]``; zero padding kept. Raises HostlistError."""
    if not isinstance(text, str):
        raise HostlistError(f"bad hostlist {text!r}: not text")
    if len(text) > MAX_TEXT:
        raise HostlistError(f"bad hostlist {_shown(text)}: longer than {MAX_TEXT} characters")
    if _size(text) > MAX_NAMES:
        raise HostlistError(f"bad hostlist {_shown(text)}: names more than {MAX_NAMES} hosts")
    import hostlist  # the library; imported only when a hostlist is expanded

    # Slurm separates hosts by commas and blanks; the library by commas only
    joined = ",".join(p for p in _split_top(re.sub(r"\s+", ",", text.strip())) if p)
    try:
        names: list[str] = hostlist.expand_hostlist(joined, allow_duplicates=True)  # Slurm keeps repeats
    except hostlist.BadHostlist as exc:
        raise HostlistError(f"bad hostlist {_shown(text)}: {exc}") from None
    if any(not n.strip() or n != n.strip() for n in names):
        raise HostlistError(f"bad hostlist {_shown(text)}: empty or blank host name")
    return names


def compress_hostlist(names: list[str]) -> str:
    """``["node1", "node2", "x"]`` -> ``"node[1-2],x"`` (sorted, duplicates dropped). Raises HostlistError."""
    import hostlist

    if len(names) > MAX_NAMES:
        raise HostlistError(f"bad host names: more than {MAX_NAMES}")
    try:
        text: str = hostlist.collect_hostlist(list(names))
    except hostlist.BadHostlist as exc:
        raise HostlistError(f"bad host names: {exc}") from None
    return text
