# SPDX-License-Identifier: Apache-2.0
"""The simulator's parameters from text (pure): shares, TRESBillingWeights, and ``--sweep PARAM=V1,V2,...``
with one row per value for DIR/sweep.csv (docs/simulate.md "Sweeps").

Sweep names: Slurm's where Slurm has one -- ``bf_window`` (Slurm time, a bare number is minutes),
``bf_interval`` and ``sched_interval`` (a bare number is seconds, as in slurm.conf), ``bf_max_job_test``,
``default_queue_depth``, ``fairshare_weight``
(PriorityWeightFairshare), ``half_life`` (PriorityDecayHalfLife), ``calc_period`` (PriorityCalcPeriod),
``ckpt_interval``, ``fairshare`` (classic, fair-tree), ``allocator`` (priority, drf), ``preempt_type``,
``max_tres`` and ``backfill`` (true/false) -- or any integer field of :class:`~slurm_gpu.sim.params.Params`
by its own name (``weight_age``, ``release_s``, ...).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping, Sequence
from typing import TypeAlias, get_args

from slurm_gpu.csv_cells import row
from slurm_gpu.digits import ascii_int, is_digits
from slurm_gpu.jsontypes import JsonValue, json_at
from slurm_gpu.sim.params import Allocator, FairShareScheme, Params, PreemptType
from slurm_gpu.units import UnitError, parse_time_seconds
from slurm_gpu.yesno import yes_no

MAX_SWEEP = 50  # values in one sweep

SweepValue: TypeAlias = "int | bool | str"  # what the parsers below return: a Params field's value
SweepRow: TypeAlias = "tuple[JsonValue, ...]"  # one row of sweep.csv: the param, its value text, summary.json's figures


class SettingError(ValueError):
    """A parameter text that cannot be read (a usage error, exit 2)."""


def _seconds(text: str) -> int:
    try:
        return parse_time_seconds(text)
    except UnitError as exc:
        raise SettingError(str(exc)) from None


def _int(text: str) -> int:
    v = ascii_int(text.strip())  # ASCII digits: int() would take "٣", "1_0", "+3"
    if v is None:
        raise SettingError(f"{text!r} is not a whole number" + (" (negative)" if text.strip().startswith("-") else ""))
    return v


def _choice(choices: tuple[str, ...]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in choices:
            raise SettingError(f"{text!r} is not one of {', '.join(choices)}")
        return text
    return parse


def _bool(text: str) -> bool:
    flag = yes_no(text)
    if flag is None:
        raise SettingError(f"{text!r} is not true or false")
    return flag


ALIASES: dict[str, tuple[str, Callable[[str], SweepValue]]] = {
    "bf_window": ("bf_window_s", _seconds),
    "bf_interval": ("bf_interval_s", lambda t: _int(t) if is_digits(t) else _seconds(t)),
    "bf_max_job_test": ("bf_max_job_test", _int),
    "default_queue_depth": ("default_queue_depth", _int),
    "sched_interval": ("sched_interval_s", lambda t: _int(t) if is_digits(t) else _seconds(t)),
    "fairshare_weight": ("weight_fairshare", _int),
    "half_life": ("half_life_s", _seconds),
    "calc_period": ("calc_period_s", _seconds),
    "ckpt_interval": ("ckpt_interval_s", _seconds),
    "fairshare": ("fairshare", _choice(get_args(FairShareScheme))),
    "allocator": ("allocator", _choice(get_args(Allocator))),
    "preempt_type": ("preempt_type", _choice(get_args(PreemptType))),
    "max_tres": ("max_tres", _bool),
    "backfill": ("backfill", _bool),
}


def parse_sweep(spec: str) -> tuple[str, str, list[tuple[str, SweepValue]]]:
    """``PARAM=V1,V2,...`` -> (the name as given, the Params field, [(value text, value)])."""
    name, sep, values = spec.partition("=")
    name = name.strip()
    if not sep or not name or not values.strip():
        raise SettingError(f"--sweep {spec!r}: expected PARAM=V1,V2,...")
    if name in ALIASES:
        field, parse = ALIASES[name]
    elif name in Params._fields and isinstance(getattr(Params(), name), int) \
            and not isinstance(getattr(Params(), name), bool):
        field, parse = name, _int
    else:
        raise SettingError(f"--sweep: unknown parameter {name!r} (one of {', '.join(ALIASES)}, "
                           "or an integer field of the simulator's parameters)")
    texts = [v.strip() for v in values.split(",")]
    if any(not t for t in texts) or len(texts) > MAX_SWEEP:
        raise SettingError(f"--sweep {spec!r}: 1 to {MAX_SWEEP} non-empty values")
    try:
        return name, field, [(t, parse(t)) for t in texts]
    except SettingError as exc:
        raise SettingError(f"--sweep {name}: {exc}") from None


def parse_shares(text: str) -> tuple[tuple[str, float], ...]:
    """``phys=3,phys/theory=1,chem=1`` (an account path = its raw shares, sacctmgr's Fairshare=)."""
    out = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        path, sep, value = item.partition("=")
        try:
            shares = float(value)
        except ValueError:
            shares = -1.0
        if not sep or not path.strip("/") or shares < 0:
            raise SettingError(f"--shares {item!r}: expected ACCOUNT[/SUBACCOUNT]=SHARES (a number >= 0)")
        out.append((path.strip(), shares))
    return tuple(out)


def parse_billing_weights(text: str) -> tuple[tuple[str, float], ...]:
    """TRESBillingWeights: ``CPU=1.0,Mem=0.25G,GRES/gpu=15`` -> weights per CPU, per GB, per GPU (Slurm:
    a Mem weight without a unit is per MB; ``gres/gpu:TYPE`` counts as gres/gpu)."""
    out = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        name, sep, value = item.partition("=")
        key = name.strip().lower()
        if key.startswith("gres/gpu"):
            key = "gres/gpu"
        scale = 1.0
        if key == "mem" and value[-1:].upper() in ("K", "M", "G", "T"):
            scale = {"K": 1024.0 * 1024, "M": 1024.0, "G": 1.0, "T": 1 / 1024}[value[-1].upper()]
            value = value[:-1]
        elif key == "mem":
            scale = 1024.0  # per MB -> per GB
        try:
            weight = float(value) * scale
        except ValueError:
            weight = -1.0
        if not sep or key not in ("cpu", "mem", "gres/gpu") or weight < 0:
            raise SettingError(f"--billing-weights {item!r}: expected CPU=W, Mem=W[K|M|G|T] or GRES/gpu=W")
        out.append((key, weight))
    return tuple(out)


SWEEP_COLUMNS = ("param", "value", "policy", "jobs", "started", "wait_p50_s", "wait_p95_s", "jct_p50_s",
                 "jct_p95_s", "gpu_utilisation", "preemptions", "lost_gpu_hours", "fragmentation_mean",
                 "jain", "cost_per_effective_gpu_hour")




def sweep_row(param: str, value: str, summary: Mapping[str, JsonValue]) -> SweepRow:
    a = summary.get("all")
    return (param, value, summary.get("policy", ""), json_at(a, ("jobs",)), json_at(a, ("started",)),
            json_at(a, ("wait_s", "p50")), json_at(a, ("wait_s", "p95")), json_at(a, ("jct_s", "p50")),
            json_at(a, ("jct_s", "p95")), json_at(a, ("gpu_utilisation",)), json_at(a, ("preemptions",)),
            json_at(a, ("lost_gpu_hours",)), json_at(summary, ("fragmentation", "mean_k_node")),
            json_at(summary, ("fairness", "jain")), json_at(a, ("cost_per_effective_gpu_hour",)))


def sweep_csv(rows: Sequence[SweepRow]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(SWEEP_COLUMNS)
    w.writerows(row("" if v is None else v for v in r) for r in rows)
    return out.getvalue()


def sweep_table(rows: Sequence[SweepRow]) -> str:
    cells = [list(SWEEP_COLUMNS[1:])] + [["-" if v is None else f"{v:g}" if isinstance(v, float) else str(v)
                                          for v in r[1:]] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    return "".join("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) + "\n" for r in cells)
