# SPDX-License-Identifier: Apache-2.0
"""Slurm hostlists: ``node[1-3,5],gpu07`` <-> a list of names."""

from __future__ import annotations

import re

_BRACKET = re.compile(r"^([^\[\],]*)\[([^\]]+)\]([^\[\],]*)$")


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def expand_hostlist(text: str) -> list[str]:
    """``"node[1-2],a100n1"`` -> ``["node1", "node2", "a100n1"]``. Zero padding is kept (``n[01-02]``)."""
    names: list[str] = []
    for part in _split_top(text):
        m = _BRACKET.match(part)
        if not m:
            if "[" in part or "]" in part:
                raise ValueError(f"bad hostlist item {part!r}; expected name or prefix[1-3,5]")
            names.append(part)
            continue
        prefix, ranges, suffix = m.groups()
        for r in ranges.split(","):
            lo, sep, hi = r.strip().partition("-")
            if not lo.isdigit() or (sep and not hi.isdigit()):
                raise ValueError(f"bad range {r!r} in hostlist {text!r}")
            width = len(lo) if lo.startswith("0") else 0
            for n in range(int(lo), int(hi if sep else lo) + 1):
                names.append(f"{prefix}{n:0{width}d}{suffix}")
    return names


def compress_hostlist(names: list[str]) -> str:
    """``["node1", "node2", "x"]`` -> ``"node[1-2],x"`` (order of first appearance per prefix)."""
    groups: dict[tuple[str, int], list[int]] = {}
    order: list[tuple[str, int] | str] = []
    for name in names:
        m = re.match(r"^(.*?)(\d+)$", name)
        if not m:
            order.append(name)
            continue
        key = (m.group(1), len(m.group(2)) if m.group(2).startswith("0") else 0)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(m.group(2)))
    out: list[str] = []
    for key in order:
        if isinstance(key, str):
            out.append(key)
            continue
        prefix, width = key
        nums = sorted(set(groups[key]))
        if len(nums) == 1:
            out.append(f"{prefix}{nums[0]:0{width}d}")
            continue
        spans, i = [], 0
        while i < len(nums):
            j = i
            while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
                j += 1
            a, b = f"{nums[i]:0{width}d}", f"{nums[j]:0{width}d}"
            spans.append(a if i == j else f"{a}-{b}")
            i = j + 1
        out.append(f"{prefix}[{','.join(spans)}]")
    return ",".join(out)
