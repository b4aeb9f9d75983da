# SPDX-License-Identifier: Apache-2.0
"""Field converters for the policy validator: each takes a YNode and returns a value or raises Bad.

Every converter has an ``allowed`` text used in messages ("found X, allowed Y").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from slurm_gpu.hostlist import expand_hostlist
from slurm_gpu.policy.durations import DURATION_FORMS, UNLIMITED, parse_duration_min, parse_duration_s
from slurm_gpu.policy.yamlload import YNode

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
MIG_RE = re.compile(r"^([1-7])g\.(\d+)gb$")
MEM_RE = re.compile(r"^(\d+)\s*([KMGT]?)B?$", re.I)


class Bad(Exception):
    def __init__(self, found: str, allowed: str, node: YNode | None = None):
        super().__init__(found)
        self.found, self.allowed, self.node = found, allowed, node


def describe(node: YNode) -> str:
    if node.kind == "map":
        return "a mapping"
    if node.kind == "seq":
        return "a list"
    v = node.value
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v)


Conv = Callable[[YNode], Any]


def _scalar(node: YNode, allowed: str) -> Any:
    if node.kind != "scalar" or node.value is None:
        raise Bad(describe(node), allowed)
    return node.value


def name(node: YNode) -> str:
    allowed = "a name of letters, digits, '_', '-', '.'"
    v = _scalar(node, allowed)
    if not isinstance(v, str) or not NAME_RE.match(v):
        raise Bad(describe(node), allowed)
    return v


def text(node: YNode) -> str:
    v = _scalar(node, "a string")
    if not isinstance(v, str):
        raise Bad(describe(node), "a string")
    return v


def boolean(node: YNode) -> bool:
    v = _scalar(node, "true or false")
    if not isinstance(v, bool):
        raise Bad(describe(node), "true or false")
    return v


def int_min(lo: int) -> Conv:
    allowed = f"an integer >= {lo}"

    def conv(node: YNode) -> int:
        v = _scalar(node, allowed)
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise Bad(describe(node), allowed)
        return v

    conv.allowed = allowed  # type: ignore[attr-defined]
    return conv


def number_pos(node: YNode) -> float:
    allowed = "a number > 0"
    v = _scalar(node, allowed)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
        raise Bad(describe(node), allowed)
    return float(v)


def fraction(node: YNode) -> float:
    allowed = "a number > 0 and <= 1"
    v = _scalar(node, allowed)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
        raise Bad(describe(node), allowed)
    return float(v)


def pct(node: YNode) -> int:
    allowed = "an integer percentage 1-100"
    v = _scalar(node, allowed)
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 100:
        raise Bad(describe(node), allowed)
    return v


def duration_min(node: YNode) -> int:
    v = _scalar(node, f"a duration ({DURATION_FORMS})")
    try:
        return parse_duration_min(v)
    except ValueError:
        raise Bad(describe(node), f"a duration ({DURATION_FORMS})") from None


def limit_min(node: YNode) -> int | None:
    allowed = f"a duration ({DURATION_FORMS}) or UNLIMITED"
    v = _scalar(node, allowed)
    if isinstance(v, str) and v.strip().lower() in UNLIMITED:
        return None
    try:
        return parse_duration_min(v)
    except ValueError:
        raise Bad(describe(node), allowed) from None


def duration_s(node: YNode) -> int:
    allowed = f"a duration ({DURATION_FORMS}); a bare number is minutes"
    v = _scalar(node, allowed)
    try:
        return parse_duration_s(v)
    except ValueError:
        raise Bad(describe(node), allowed) from None


def mem_mb(node: YNode) -> int:
    allowed = "a size such as 16G, 16000M or a number of MB"
    v = _scalar(node, allowed)
    if isinstance(v, int) and not isinstance(v, bool) and v > 0:
        return v
    m = MEM_RE.match(str(v).strip()) if isinstance(v, str) else None
    if not m or int(m.group(1)) <= 0:
        raise Bad(describe(node), allowed)
    scale = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}[m.group(2).upper()]
    return max(1, int(int(m.group(1)) * scale))


def enum(*values: str) -> Conv:
    allowed = "one of " + ", ".join(values)

    def conv(node: YNode) -> str:
        v = _scalar(node, allowed)
        if not isinstance(v, str) or v not in values:
            raise Bad(describe(node), allowed)
        return v

    return conv


def cpus_per_gpu(node: YNode) -> int | str:
    allowed = "an integer >= 1 or 'topology'"
    v = _scalar(node, allowed)
    if v == "topology" or (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
        return v
    raise Bad(describe(node), allowed)


def hostlist(node: YNode) -> tuple[str, tuple[str, ...]]:
    allowed = "a Slurm hostlist such as node[1-4],gpu07"
    v = _scalar(node, allowed)
    if not isinstance(v, str):
        raise Bad(describe(node), allowed)
    try:
        names = expand_hostlist(v)
    except ValueError:
        raise Bad(describe(node), allowed) from None
    if not names or any(not NAME_RE.match(n) for n in names):
        raise Bad(describe(node), allowed)
    return v, tuple(names)


def list_of(item: Conv, allowed_item: str) -> Conv:
    allowed = f"a list of {allowed_item}"

    def conv(node: YNode) -> tuple[Any, ...]:
        if node.kind != "seq":
            raise Bad(describe(node), allowed)
        out = []
        for child in node.items:
            try:
                out.append(item(child))
            except Bad as exc:
                raise Bad(exc.found, allowed, child) from None
        return tuple(out)

    return conv


def mig_profile(node: YNode) -> str:
    v = _scalar(node, "a MIG profile like 1g.10gb")
    if not isinstance(v, str) or not MIG_RE.match(v):
        raise Bad(describe(node), "a MIG profile like 1g.10gb")
    return v


def option(node: YNode) -> str:
    allowed = "an sbatch option such as --requeue or --signal=B:USR1@120"
    v = _scalar(node, allowed)
    if not isinstance(v, str) or not re.match(r"^--[a-z][a-z0-9-]*(=\S.*)?$", v):
        raise Bad(describe(node), allowed)
    return v


names = list_of(name, "names")
mig_profiles = list_of(mig_profile, "MIG profiles like 1g.10gb")
options = list_of(option, "sbatch options such as --requeue")
