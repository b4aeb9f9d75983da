# SPDX-License-Identifier: Apache-2.0
"""Value grammars of sbatch options as small pure functions.

Each function takes the text the user wrote and returns a typed value, or raises ``ValueError`` whose
message is "bad value '<text>'; accepted: <forms>". The option parser wraps that into an ``OptionError``
naming the option (and the script line); click ParamTypes can call the same functions.
"""

from __future__ import annotations

import re

from slurm_gpu.digits import is_digits
from slurm_gpu.plain import NamedTuple

GPUS_FORMS = "N or TYPE:N, comma separated (e.g. 2, a100:2)"
GRES_FORMS = "NAME[:TYPE][:COUNT], comma separated (e.g. gpu:2, gpu:a100:2, gres/gpu:1, none)"
TRES_FORMS = "TRES:COUNT or TRES=COUNT, comma separated (e.g. gres/gpu:2, gres/gpu:a100:1, cpu:4)"
GPU_BIND_FORMS = "[verbose,]closest|none|single:N|per_task:N|map_gpu:LIST|mask_gpu:LIST"
TRES_BIND_FORMS = "gres/gpu:[verbose,]closest|none|single:N|per_task:N|map:LIST|mask:LIST[+...]"
ARRAY_FORMS = "N, N-M, N-M:STEP, comma separated, optional %MAX (e.g. 0-15%4, 1,3,5, 0-99:10)"
COUNT_FORMS = "a whole number >= {0}"
NODES_FORMS = "N, MIN-MAX or a list of sizes (e.g. 2, 2-4, 1,2,4)"
NODELIST_FORMS = "a host list such as node[1-4],gpu7"
FRACTION_FORMS = "a fraction of one GPU above 0 and below 1, such as 0.25, 1/7 or 30%"
EXCLUSIVE_FORMS = "no value, user or mcs (topo from Slurm 24.11)"
TOPO_EXCLUSIVE_SINCE = (24, 11, 0)  # not measured: 22.05.8 refuses topo (measured), 24.11 documents it

def _bad(text: str, forms: str) -> ValueError:
    return ValueError(f"bad value {text!r}; accepted: {forms}")


def parse_count(text: str, minimum: int = 0) -> int:
    """A whole number >= ``minimum`` (task, CPU and GPU counts)."""
    t = text.strip()
    if not is_digits(t) or int(t) < minimum:
        raise _bad(text, COUNT_FORMS.format(minimum))
    return int(t)


def parse_nodes_range(text: str) -> tuple[int, int]:
    """``--nodes`` as (minimum, maximum): ``N`` -> (N, N), ``MIN-MAX`` -> (MIN, MAX), a size list
    (``1,2,4``, ``2-8:2``) -> (smallest, largest)."""
    t = text.strip()
    if not re.fullmatch(r"[0-9]{1,9}(-[0-9]{1,9})?(:[0-9]{1,9})?(,[0-9]{1,9}(-[0-9]{1,9})?(:[0-9]{1,9})?)*", t):
        raise _bad(text, NODES_FORMS)
    lows, highs = [], []
    for part in t.split(","):
        bits = re.split(r"[-:]", part)
        lows.append(int(bits[0]))
        highs.append(int(bits[1]) if "-" in part else int(bits[0]))
    return min(lows), max(highs)


def parse_nodes_min(text: str) -> int:
    """The minimum node count of ``--nodes`` (``N``, ``MIN-MAX``, ``MIN-MAX:STEP`` or ``1,2,4``)."""
    return parse_nodes_range(text)[0]


class GpuCount(NamedTuple):
    """A GPU request item: ``gpu_type`` None when untyped."""

    gpu_type: str | None
    count: int  # type: ignore[assignment]  # Slurm's word; hides tuple.count, which nothing uses


_COUNT_RE = r"^([0-9]+)([kKmMgG])?$"


def _gres_count(text: str) -> int:
    m = re.match(_COUNT_RE, text)
    if not m:
        raise ValueError(text)
    factor = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[(m.group(2) or "").lower()]
    return int(m.group(1)) * factor


def parse_gpus(text: str) -> tuple[GpuCount, ...]:
    """``--gpus``/``--gpus-per-node``/``--gpus-per-task``/``--gpus-per-socket``: ``[type:]N[,...]``."""
    items = []
    for part in text.strip().split(","):
        bits = part.split(":")
        if part.startswith("gpu:") and len(bits) in (2, 3):  # "gpu:a100:2" is also accepted
            bits = bits[1:]
        try:
            if len(bits) == 1:
                items.append(GpuCount(None, parse_count(bits[0])))
            elif len(bits) == 2 and bits[0]:
                items.append(GpuCount(bits[0], parse_count(bits[1])))
            else:
                raise ValueError(part)
        except ValueError:
            raise _bad(text, GPUS_FORMS) from None
    return tuple(items)


class GresItem(NamedTuple):
    """One item of a ``--gres`` list: ``name[:type][:count]`` (count 1 when not given)."""

    name: str
    gres_type: str | None
    count: int  # type: ignore[assignment]  # Slurm's word; hides tuple.count, which nothing uses


# 22.05.8 reads --gres=gpu:1g.10gb as the count "1g" and refuses it (measured); 24.11.5 takes it as the
# type 1g.10gb, count 1 (measured: the job is created). 23.02-24.05 not measured: treated as 22.05.
GRES_DIGIT_TYPE_SINCE = (24, 11, 0)


def gres_body(item: str) -> str:
    """One ``--gres`` item without the ``gres/`` or ``gres:`` prefix Slurm itself writes (``gres/gpu:2``)."""
    for prefix in ("gres/", "gres:"):
        if item.startswith(prefix):
            item = item[len(prefix):]
    return item


def parse_gres(text: str, version: tuple[int, ...] | None = None) -> tuple[GresItem, ...]:
    """``--gres`` list; accepts the ``gres/`` and ``gres:`` prefixes Slurm itself writes. ``none`` = ().
    ``version``: the sbatch release to check against (None: accept what any release accepts)."""
    digit_type_ok = version is None or tuple(version) >= GRES_DIGIT_TYPE_SINCE
    t = text.strip()
    if t.lower() == "none":
        return ()
    items = []
    for part in t.split(","):
        body = gres_body(part)
        bits = body.split(":")
        try:
            if not bits[0] or not re.fullmatch(r"[A-Za-z0-9_.\-]+", bits[0]) or len(bits) > 3:
                raise ValueError(part)
            if len(bits) == 1:
                items.append(GresItem(bits[0], None, 1))
            elif len(bits) == 2:
                if re.match(_COUNT_RE, bits[1]):
                    items.append(GresItem(bits[0], None, _gres_count(bits[1])))
                elif bits[1] and (not is_digits(bits[1][0]) or digit_type_ok):
                    items.append(GresItem(bits[0], bits[1], 1))
                elif bits[1]:  # Slurm reads "gpu:1g.10gb" as a count ("1g") and refuses the rest
                    raise _bad(text, f"{GRES_FORMS}; a type that starts with a digit needs its count "
                                     f"({part}:1): Slurm reads {part!r} as a count")
                else:
                    raise ValueError(part)
            else:
                if not bits[1]:
                    raise ValueError(part)
                items.append(GresItem(bits[0], bits[1], _gres_count(bits[2])))
        except ValueError as exc:
            if "starts with a digit" in str(exc):
                raise
            raise _bad(text, GRES_FORMS) from None
    return tuple(items)


def parse_tres(text: str) -> tuple[GresItem, ...]:
    """``--tres-per-task`` list (``gres/gpu:2``, ``gres/gpu:a100:1``, ``cpu:4``, ``cpu=4``)."""
    items = []
    for part in text.strip().split(","):
        name, sep, count = part.replace("=", ":").rpartition(":")
        if not sep or not name or not re.match(_COUNT_RE, count):
            raise _bad(text, TRES_FORMS)
        kind, _, gres_type = name.partition(":")
        if kind.startswith("gres/"):
            kind = kind[5:]
        elif kind != "cpu" and "/" not in kind:
            raise _bad(text, TRES_FORMS)
        items.append(GresItem(kind, gres_type or None, _gres_count(count)))
    return tuple(items)


_BIND_RE = (
    r"^(verbose,)?(closest|none|(single|per_task):[0-9]+|(map_gpu|map|mask_gpu|mask):[0-9A-Fa-fx*,]+)$"
)


def parse_gpu_bind(text: str) -> str:
    """``--gpu-bind`` (returned unchanged once it is valid)."""
    if not re.match(_BIND_RE, text.strip()):
        raise _bad(text, GPU_BIND_FORMS)
    return text.strip()


def parse_tres_bind(text: str) -> str:
    """``--tres-bind`` (23.11+): ``gres/gpu:<gpu-bind type>``, several joined by ``+``."""
    for part in text.strip().split("+"):
        tres, sep, spec = part.partition(":")
        if not sep or not tres.startswith("gres/") or not re.match(_BIND_RE, spec):
            raise _bad(text, TRES_BIND_FORMS)
    return text.strip()


class ArraySpec(NamedTuple):
    """A parsed ``--array``: its task ids and the %MAX throttle (None when not given)."""

    task_ids: tuple[int, ...]
    max_running: int | None


def parse_array(text: str) -> ArraySpec:
    """``--array=0-15%4`` style specs."""
    spec, pct, limit = text.strip().partition("%")
    if pct and not is_digits(limit):
        raise _bad(text, ARRAY_FORMS)
    ids: list[int] = []
    for part in spec.split(","):
        m = re.fullmatch(r"([0-9]+)(?:-([0-9]+)(?::([0-9]+))?)?", part)
        if not m:
            raise _bad(text, ARRAY_FORMS)
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        step = int(m.group(3)) if m.group(3) else 1
        if hi < lo or step < 1:
            raise _bad(text, ARRAY_FORMS)
        ids.extend(range(lo, hi + 1, step))
    return ArraySpec(tuple(sorted(set(ids))), int(limit) if pct else None)


def parse_nodelist(text: str) -> tuple[str, ...]:
    """A host list (``node[1-4],gpu7``) expanded to names."""
    from slurm_gpu.hostlist import expand_hostlist  # only when a node list is given

    try:
        names = expand_hostlist(text.strip())
    except Exception:  # the hostlist module raises its own errors; we only need "invalid"
        raise _bad(text, NODELIST_FORMS) from None
    if not names or any(not n or any(c in n for c in " []") for n in names):
        raise _bad(text, NODELIST_FORMS)
    return tuple(names)


def parse_exclusive(text: str | None, version: tuple[int, int, int] | None = None) -> str | None:
    """``--exclusive[=user|mcs|topo]`` / ``SBATCH_EXCLUSIVE``: the value, any case (measured on 22.05.8:
    ``SBATCH_EXCLUSIVE=yes``, ``1``, ``no``, ``topo`` are refused, "Invalid --exclusive specification")."""
    if text is None or text == "":
        return None
    words = ("user", "mcs") + (("topo",) if version is None or version >= TOPO_EXCLUSIVE_SINCE else ())
    if text.lower() not in words:
        raise _bad(text, EXCLUSIVE_FORMS + " (sbatch: Invalid --exclusive specification)")
    return text.lower()


def parse_requeue(text: str) -> str:
    """``--requeue=expedite`` (25.11+; any case): the one word sbatch takes (26.05.5: "Invalid --requeue
    specification" for any other; slurm.release.REQUEUE_WORDS)."""
    from slurm_gpu.slurm.release import REQUEUE_WORDS

    if text.lower() not in REQUEUE_WORDS:
        raise _bad(text, "--requeue or --requeue=expedite (sbatch: Invalid --requeue specification)")
    return text.lower()


def parse_partitions(text: str) -> tuple[str, ...]:
    """``--partition=a,b``: the partitions in the order given (Slurm starts the job in the first that can)."""
    names = tuple(p.strip() for p in text.split(","))
    if not names or any(not n for n in names):
        raise _bad(text, "a partition name or a comma-separated list (e.g. batch, batch,spot)")
    return names


def parse_gpu_fraction(text: str) -> float:
    """Part of one GPU: ``0.25``, ``1/7`` or ``30%`` -> a float strictly between 0 and 1."""
    t = text.strip()
    try:
        if not t.isascii():  # float() reads other scripts' digits ("٠٫٥")
            raise ValueError
        if t.endswith("%"):
            value = float(t[:-1]) / 100
        elif "/" in t:
            num, _, den = t.partition("/")
            value = float(num) / float(den)
        else:
            value = float(t)
    except (ValueError, ZeroDivisionError):
        raise _bad(text, FRACTION_FORMS) from None
    if not 0 < value < 1:
        raise _bad(text, FRACTION_FORMS)
    return value
