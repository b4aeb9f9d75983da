# SPDX-License-Identifier: Apache-2.0
"""Field converters for the policy validator: :func:`converter` turns a kind of the model's schema
declaration (:mod:`slurm_gpu.policy.kinds`) into a function that takes a YNode and returns a value
or raises Bad. Every converter has an ``allowed`` text used in messages ("found X, allowed Y").
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from slurm_gpu import units
from slurm_gpu.policy import kinds as K
from slurm_gpu.policy.durations import parse_duration_s
from slurm_gpu.policy.yamlload import YNode

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
OPTION_PATTERN = r"^--[a-z][a-z0-9-]*(=\S.*)?$"
DURATION_FORMS = units.DURATION_FORMS
SHOWN = 60  # longest value text quoted in a message


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
    text = repr(v)
    if len(text) <= SHOWN:
        return text
    return text[:SHOWN] + ("...'" if isinstance(v, str) else "...")


def key_text(value: object) -> str:
    """A mapping key as it may appear in a field path: one line, at most SHOWN characters."""
    text = str(value) if str(value).isprintable() else repr(str(value))[1:-1]
    return text if len(text) <= SHOWN else text[:SHOWN] + "..."


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
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise Bad(describe(node), allowed)
    return float(v)


def fraction(node: YNode) -> float:
    allowed = "a number > 0 and <= 1"
    v = _scalar(node, allowed)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 < v <= 1:
        raise Bad(describe(node), allowed)
    return float(v)


def int_range(lo: int, hi: int) -> Conv:
    allowed = f"an integer {lo}-{hi}"

    def conv(node: YNode) -> int:
        v = _scalar(node, allowed)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise Bad(describe(node), allowed)
        return v

    return conv


def pct(node: YNode) -> int:
    allowed = "an integer percentage 1-100"
    v = _scalar(node, allowed)
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 100:
        raise Bad(describe(node), allowed)
    return v


def duration_min(node: YNode) -> int:
    allowed = f"a duration ({DURATION_FORMS})"
    v = _scalar(node, allowed)
    try:
        return -(-parse_duration_s(v) // 60)
    except ValueError:
        raise Bad(describe(node), allowed) from None


def limit_min(node: YNode) -> int | None:
    allowed = f"a duration ({DURATION_FORMS}) or UNLIMITED"
    v = _scalar(node, allowed)
    if isinstance(v, str) and v.strip().lower() in units.UNLIMITED_WORDS:
        return None
    try:
        return -(-parse_duration_s(v) // 60)
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
    if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= units.MAX_MEM_MB:
        return v
    try:
        mb = units.parse_mem_mb(v.replace(" ", "")) if isinstance(v, str) else 0
    except ValueError:
        mb = 0
    if mb <= 0:
        raise Bad(describe(node), allowed)
    return mb


def enum(*values: str, aliases: tuple[tuple[str, object], ...] = ()) -> Conv:
    allowed = "one of " + ", ".join(values + tuple(a for a, _ in aliases))

    def conv(node: YNode) -> Any:
        v = _scalar(node, allowed)
        if isinstance(v, str) and v in dict(aliases):
            return dict(aliases)[v]
        if not isinstance(v, str) or v not in values:
            raise Bad(describe(node), allowed)
        return v

    return conv


def cpus_per_gpu(node: YNode) -> int | str:
    allowed = "an integer >= 1 or 'topology'"
    v = _scalar(node, allowed)
    if v == "topology":
        return "topology"
    if isinstance(v, int) and not isinstance(v, bool) and v >= 1:
        return v
    raise Bad(describe(node), allowed)


def hostlist(node: YNode) -> tuple[str, tuple[str, ...]]:
    allowed = "a Slurm hostlist such as node[1-4],gpu07"
    v = _scalar(node, allowed)
    if not isinstance(v, str):
        raise Bad(describe(node), allowed)
    from slurm_gpu.hostlist import expand_hostlist

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
    allowed = "a MIG profile like 1g.10gb"
    v = _scalar(node, allowed)
    try:
        prof = units.parse_mig_profile(v) if isinstance(v, str) else None
    except ValueError:
        prof = None
    if prof is None or prof.gpu_type is not None:  # the GPU type is the entry's, not the profile's
        raise Bad(describe(node), allowed)
    return units.format_mig_profile(prof)


def option(node: YNode) -> str:
    allowed = "an sbatch option such as --requeue or --signal=B:USR1@120"
    v = _scalar(node, allowed)
    if not isinstance(v, str) or len(v) > 4096 or not re.match(OPTION_PATTERN, v):
        raise Bad(describe(node), allowed)
    return v


def version(node: YNode) -> int:
    if node.kind != "scalar" or node.value != 1 or isinstance(node.value, bool):
        raise Bad(describe(node), "1")
    return 1


_SIMPLE: dict[type, Conv] = {
    K.Name: name, K.Text: text, K.Bool: boolean, K.Limit: limit_min, K.MemMB: mem_mb,
    K.CpusPerGpu: cpus_per_gpu, K.Hostlist: hostlist, K.MigProfile: mig_profile, K.Option: option,
}


def converter(kind: K.Kind) -> Conv:
    """The converter of one kind of the schema declaration (Nested/Section/Paths/Messages: the validator's)."""
    if type(kind) in _SIMPLE:
        return _SIMPLE[type(kind)]
    if isinstance(kind, K.Int):
        if kind.hi is None:
            return int_min(kind.lo)
        return pct if (kind.lo, kind.hi) == (1, 100) else int_range(kind.lo, kind.hi)
    if isinstance(kind, K.Number):
        return fraction if kind.le == 1 else number_pos
    if isinstance(kind, K.Duration):
        return duration_s if kind.unit == "s" else duration_min
    if isinstance(kind, K.Enum):
        return enum(*kind.values, aliases=kind.aliases)
    if isinstance(kind, K.ListOf):
        return list_of(converter(kind.item), kind.item_text)
    if isinstance(kind, K.Const):
        return version
    raise TypeError(f"no converter for {kind!r}")
