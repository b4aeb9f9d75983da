# SPDX-License-Identifier: Apache-2.0
"""How often to checkpoint: Young's and Daly's optimal intervals, the expected overhead and the
expected work lost per interruption (pure; ``slurm-gpu ckpt advise`` prints it).

C is the checkpoint cost (seconds to write one), M the mean time to interruption (MTTI), R the restart
cost (seconds from a restart to work again; 0 unless given), tau the compute time between two
checkpoints. Interruptions are taken as a Poisson process of mean M (Daly's model).

- Young (1974):  tau_Y = sqrt(2 C M)
- Daly (2006):   tau_D = sqrt(2 C M) * (1 + 1/3 * sqrt(C / (2M)) + C / (18 M)) - C   when C < 2M,
                 tau_D = M                                                           otherwise.
  Daly's interval is always the shorter: tau_D - tau_Y = C * (sqrt(2C/M)/18 - 2/3) < 0 for C < 2M.
- Expected overhead (Daly's expected wall time over the work, minus one):
                 overhead(tau) = (M / tau) * e^(R/M) * (e^((tau + C)/M) - 1) - 1  ~  C/tau + tau/(2M)
- Expected work lost per interruption: the time already spent in the current segment of
  tau + C seconds when the interruption comes (the work since the last complete checkpoint):
                 lost(tau) = M - (tau + C) / (e^((tau + C)/M) - 1)  ~  (tau + C) / 2,
  at most tau + C (one interval and one checkpoint).
"""

from __future__ import annotations

import math
import re

from slurm_gpu.plain import Record, record
from slurm_gpu.units import UnitError, parse_time_seconds

MAX_SECONDS = 1e12  # about 30,000 years: beyond any cost or MTTI, keeps every value finite


class AdviceError(ValueError):
    """A cost, MTTI or restart time out of range (one line)."""


def _check(name: str, value: float, zero_ok: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise AdviceError(f"{name} must be a finite number of seconds, not {value!r}")
    if not (0 <= value if zero_ok else 0 < value) or value > MAX_SECONDS:
        raise AdviceError(f"{name} must be {'at least 0' if zero_ok else 'above 0'} and at most {MAX_SECONDS:.0e} s, "
                          f"not {value!r}")
    return float(value)


def parse_seconds(text: str) -> float:
    """A cost or restart time: a bare number is seconds (``60``, ``12.5``); anything else is a duration
    of the one grammar (:func:`slurm_gpu.units.parse_time_seconds`: ``90s``, ``5m``, ``1:30``)."""
    t = text.strip() if isinstance(text, str) else ""
    if re.fullmatch(r"[0-9]{1,12}(?:\.[0-9]{1,9})?", t):
        return float(t)
    try:
        return float(parse_time_seconds(text))
    except UnitError:
        shown = repr(text) if len(repr(text)) <= 42 else repr(text)[:40] + "...'"
        raise AdviceError(f"bad seconds {shown}: expected a number of seconds (60, 12.5) or a duration with "
                          "a unit (90s, 5m, 2h, 1:30)") from None


def parse_mtti(text: str) -> float:
    """The MTTI: a duration of the one grammar (``6h``, ``2d``, ``2-00:00:00``; a bare number is minutes)."""
    try:
        return float(parse_time_seconds(text))
    except UnitError as exc:
        raise AdviceError(str(exc)) from None


def young(cost_s: float, mtti_s: float) -> float:
    """Young's interval sqrt(2 C M), seconds of work between checkpoints."""
    c, m = _check("cost", cost_s), _check("MTTI", mtti_s)
    return math.sqrt(2 * c * m)


def daly(cost_s: float, mtti_s: float) -> float:
    """Daly's higher-order interval: sqrt(2CM)(1 + sqrt(C/2M)/3 + C/18M) - C for C < 2M, else M."""
    c, m = _check("cost", cost_s), _check("MTTI", mtti_s)
    if c >= 2 * m:
        return m
    return math.sqrt(2 * c * m) * (1 + math.sqrt(c / (2 * m)) / 3 + c / (18 * m)) - c


def overhead(interval_s: float, cost_s: float, mtti_s: float, restart_s: float = 0.0) -> float:
    """Expected extra wall time per unit of work: (M/tau) e^(R/M) (e^((tau+C)/M) - 1) - 1; inf on overflow."""
    t, c = _check("interval", interval_s), _check("cost", cost_s)
    m, r = _check("MTTI", mtti_s), _check("restart", restart_s, zero_ok=True)
    try:
        return (m / t) * math.exp(r / m) * math.expm1((t + c) / m) - 1
    except OverflowError:
        return math.inf


def lost_work(interval_s: float, cost_s: float, mtti_s: float) -> float:
    """Expected seconds of work lost per interruption: M - L/(e^(L/M) - 1) with L = tau + C (at most L)."""
    t, c, m = _check("interval", interval_s), _check("cost", cost_s), _check("MTTI", mtti_s)
    seg = t + c
    x = seg / m
    if x < 1e-4:  # the series, where M - L/expm1(x) would lose its digits to cancellation
        return seg * (0.5 - x / 12 + x ** 3 / 720)
    if x > 700:  # e^x overflows; L/(e^x - 1) is then far below M's last digit
        return m
    return m - seg / math.expm1(x)


@record
class Advice(Record):
    """The numbers ``ckpt advise`` prints (seconds; overheads as fractions)."""

    cost_s: float
    mtti_s: float
    restart_s: float
    young_s: float
    daly_s: float
    young_overhead: float
    daly_overhead: float
    young_lost_s: float
    daly_lost_s: float


def advise(cost_s: float, mtti_s: float, restart_s: float = 0.0) -> Advice:
    y, d = young(cost_s, mtti_s), daly(cost_s, mtti_s)
    return Advice(cost_s=float(cost_s), mtti_s=float(mtti_s), restart_s=float(restart_s), young_s=y, daly_s=d,
                  young_overhead=overhead(y, cost_s, mtti_s, restart_s),
                  daly_overhead=overhead(d, cost_s, mtti_s, restart_s),
                  young_lost_s=lost_work(y, cost_s, mtti_s), daly_lost_s=lost_work(d, cost_s, mtti_s))


def format_seconds(s: float) -> str:
    """A duration for people: ``26m 50s``, ``1h 02m``, ``2d 03h``, ``45.2s``; ``inf`` stays ``inf``."""
    if not math.isfinite(s):
        return "inf"
    if s < 60:
        return f"{s:.1f}s"
    whole = round(s)
    d, rem = divmod(whole, 86400)
    h, rem = divmod(rem, 3600)
    m, sec = divmod(rem, 60)
    if d:
        return f"{d}d {h:02d}h"
    if h:
        return f"{h}h {m:02d}m"
    return f"{m}m {sec:02d}s"
