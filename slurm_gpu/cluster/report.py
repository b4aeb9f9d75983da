# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu report``: GPU-hours allocated and effective, aggregate efficiency, idle GPU-hours, queue
waits, preemptions and cost per effective GPU-hour, pure (docs/report.md defines every number).

In: the rows of ``sacct -a -X -D -P -S -E`` (one row per run of a job; a requeued job has one row per
run), the policy (optional). Per row: g = its GPUs (AllocTRES), t = ElapsedRaw, U = the GPU-time-weighted
utilisation of its AdminComment summary (None without one). Sums, never means of means:

- ``gpu_hours`` = sum g t; ``gpu_hours_with_stats`` the part of rows with U; ``gpu_hours_without_stats`` the rest;
- ``effective_gpu_hours`` = sum U g t; ``efficiency`` E = effective / with_stats (None when no row has U);
- ``idle_gpu_hours`` = sum g t (1 - U) over rows with U;
- ``preemptions``: rows in state PREEMPTED or REQUEUED; ``preempted_gpu_hours`` = their g t (an upper
  bound of the work lost: work saved by a checkpoint is not known here);
- per GPU type with a price: ``cost`` = price x gpu_hours, ``cost_per_effective_gpu_hour`` = price / E;
- queue wait per class: Start - Submit of rows that started, p50 and p95 (nearest rank);
- ``days``: the GPU-hours and E of the rows that started on each UTC day (efficiency over time).

The rows are read once, one at a time (:func:`reports` gives several groupings from that one pass), and
nothing is kept per row: sums per group, type and day, and the waits as counts per distinct value (so
the percentiles stay exact and the memory is bounded by the distinct waits, not by the rows).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, NotRequired, TypedDict

from slurm_gpu.cluster.summary_codec import decode
from slurm_gpu.digits import is_digits
from slurm_gpu.plain import NamedTuple
from slurm_gpu.slurm.sacct import sacct_seconds, sacct_time, tres_gpus

if TYPE_CHECKING:
    from slurm_gpu.policy.model import Policy

SCHEMA = "slurm-gpu.report/1"
GROUP_KEYS = ("user", "account", "partition", "class")
PREEMPT_STATES = ("PREEMPTED", "REQUEUED")


class DayRow(TypedDict):
    """The runs that started on one UTC day (``days``)."""

    jobs: int
    gpu_hours: float
    gpu_hours_with_stats: float
    effective_gpu_hours: float
    efficiency: float | None  # None: no run of the day has GPU stats


class UsageRow(DayRow):
    """One group's sums (``total``, each GPU type, each ``groups`` key): docs/report.md."""

    gpu_hours_without_stats: float
    idle_gpu_hours: float
    preemptions: int
    preempted_gpu_hours: float
    price_per_gpu_hour: NotRequired[float]  # these three: a GPU type with a price in the policy
    cost: NotRequired[float]  # (``total`` has ``cost`` alone: the sum over the priced types)
    cost_per_effective_gpu_hour: NotRequired[float | None]


class WaitRow(TypedDict):
    """Queue wait of one class: the runs that started, p50 and p95 (nearest rank; None: no run)."""

    jobs: int
    p50_seconds: float | None
    p95_seconds: float | None


class ReportDoc(TypedDict):
    """The ``--json`` document of ``slurm-gpu report`` (schema ``slurm-gpu.report/1``, docs/report.md)."""

    schema: str
    since: str
    until: str
    by: str | None
    currency: str
    total: UsageRow
    types: dict[str, UsageRow]
    groups: dict[str, UsageRow]  # by ``by``; empty without
    wait: dict[str, WaitRow]
    days: dict[str, DayRow]


def _day(epoch: float) -> str:
    """The UTC day of a run's start (the ``days`` series)."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d")


class Run(NamedTuple):
    """One sacct row (one run of a job) as the report needs it."""

    job_id: str
    user: str
    account: str
    partition: str
    qos: str
    job_class: str
    state: str
    gpus: dict[str, int]  # type -> GPUs
    seconds: float
    util: float | None  # U in 0..1
    wait_s: float | None
    start: float | None

    @property
    def g(self) -> int:
        return sum(self.gpus.values())


def class_of(partition: str, qos: str, policy: Policy | None = None) -> str:
    """The policy class whose partition (and QOS, when the class sets one) the job ran in; the
    partition's name when there is no policy or no such class."""
    for c in getattr(policy, "classes", ()) if policy is not None else ():
        if c.partition == partition and (c.qos is None or c.qos == qos):
            return str(c.name)
    return partition


def runs(rows: Iterable[Mapping[str, str]], policy: Policy | None = None) -> list[Run]:
    return list(iter_runs(rows, policy))


def iter_runs(rows: Iterable[Mapping[str, str]], policy: Policy | None = None) -> Iterator[Run]:
    """The rows as :class:`Run` records, one at a time (step rows skipped)."""
    classes: dict[tuple[str, str], str] = {}
    tres: dict[str, dict[str, int]] = {}  # AllocTRES text -> GPUs per type (a site has few shapes)
    for row in rows:
        jid = row.get("JobID", "")
        if "." in jid:
            continue
        raw = row.get("ElapsedRaw") or ""
        seconds = float(raw) if is_digits(raw) else (sacct_seconds(row.get("Elapsed")) or 0.0)
        submit, start = sacct_time(row.get("Submit")), sacct_time(row.get("Start"))
        summary = decode(row.get("AdminComment"))
        partition, qos = row.get("Partition", ""), row.get("QOS", "")
        job_class = classes.get((partition, qos))
        if job_class is None:
            job_class = classes[(partition, qos)] = class_of(partition, qos, policy)
        yield Run(jid, row.get("User", ""), row.get("Account", ""), partition, qos, job_class,
                  (row.get("State") or "").split(" ")[0], _gpus(tres, row.get("AllocTRES") or ""), seconds,
                  None if summary is None else summary.utilisation(),
                  start - submit if start is not None and submit is not None and start >= submit else None,
                  start)


def _gpus(cache: dict[str, dict[str, int]], text: str) -> dict[str, int]:
    got = cache.get(text)
    if got is None:
        got = tres_gpus(text)
        if len(cache) < 10_000:
            cache[text] = got
    return got


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile (the smallest value with at least p% of the values at or below it)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def counted_percentile(counts: Mapping[float, int], p: float) -> float | None:
    """:func:`percentile` of values given as counts per distinct value."""
    n = sum(counts.values())
    if not n:
        return None
    rank = max(0, math.ceil(p / 100 * n) - 1)
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        if seen > rank:
            return value
    return None  # not reached


def _r(x: float, nd: int = 6) -> float:
    return round(x, nd)


def _ro(x: float | None, nd: int = 6) -> float | None:
    return None if x is None else round(x, nd)


class Totals:
    """Running sums for one group."""

    __slots__ = ("jobs", "gs", "gs_stats", "ugs", "pre", "pre_gs")

    def __init__(self) -> None:
        self.jobs = self.pre = 0
        self.gs = self.gs_stats = self.ugs = self.pre_gs = 0.0

    def add(self, run: Run, g: int) -> None:
        gs = g * run.seconds
        self.jobs += 1
        self.gs += gs
        if run.util is not None:
            self.gs_stats += gs
            self.ugs += run.util * gs
        if run.state in PREEMPT_STATES:
            self.pre += 1
            self.pre_gs += gs

    def efficiency(self) -> float | None:
        return self.ugs / self.gs_stats if self.gs_stats > 0 else None

    def day(self) -> DayRow:
        return {"jobs": self.jobs, "gpu_hours": _r(self.gs / 3600), "gpu_hours_with_stats": _r(self.gs_stats / 3600),
                "effective_gpu_hours": _r(self.ugs / 3600), "efficiency": _ro(self.efficiency())}

    def doc(self, price: float | None = None) -> UsageRow:
        eff = self.efficiency()
        out: UsageRow = {
            "jobs": self.jobs, "gpu_hours": _r(self.gs / 3600), "gpu_hours_with_stats": _r(self.gs_stats / 3600),
            "gpu_hours_without_stats": _r((self.gs - self.gs_stats) / 3600),
            "effective_gpu_hours": _r(self.ugs / 3600), "efficiency": _ro(eff),
            "idle_gpu_hours": _r((self.gs_stats - self.ugs) / 3600),
            "preemptions": self.pre, "preempted_gpu_hours": _r(self.pre_gs / 3600),
        }
        if price is not None:
            out["price_per_gpu_hour"] = price
            out["cost"] = _r(price * self.gs / 3600, 4)
            out["cost_per_effective_gpu_hour"] = _r(price / eff, 4) if eff else None
        return out


def report(rows: Iterable[Mapping[str, str]], policy: Policy | None = None, by: str | None = None,
           since: str = "", until: str = "") -> ReportDoc:
    """The --json document (docs/report.md)."""
    return reports(rows, policy, (by,), since, until)[0]


def reports(rows: Iterable[Mapping[str, str]], policy: Policy | None = None, bys: Sequence[str | None] = (None,),
            since: str = "", until: str = "") -> list[ReportDoc]:
    """:func:`report` once per grouping in ``bys`` (e.g. ``--by`` and the HTML's by-account charts), from
    one pass over the rows (a stream is read once)."""
    for by in bys:
        if by is not None and by not in GROUP_KEYS:
            raise ValueError(f"by: {by!r}, allowed one of {', '.join(GROUP_KEYS)}")
    prices = {p.name: p.per_gpu_hour for p in getattr(policy, "prices", ())} if policy is not None else {}
    currency = next((p.currency for p in getattr(policy, "prices", ()) if p.currency), "") if policy else ""
    total = Totals()
    per_type: dict[str, Totals] = {}
    groups: dict[str, dict[str, Totals]] = {by: {} for by in bys if by is not None}
    days: dict[int, Totals] = {}  # UTC day (epoch seconds // 86400)
    waits: dict[str, Counter[float]] = {}
    for run in iter_runs(rows, policy):
        if run.wait_s is not None:
            waits.setdefault(run.job_class, Counter())[run.wait_s] += 1
        g = run.g
        if g <= 0:
            continue
        total.add(run, g)
        if run.start is not None:
            days.setdefault(int(run.start // 86400), Totals()).add(run, g)
        for gtype, n in run.gpus.items():
            per_type.setdefault(gtype, Totals()).add(run, n)
        for by, table in groups.items():
            key = {"user": run.user, "account": run.account, "partition": run.partition, "class": run.job_class}[by]
            table.setdefault(key, Totals()).add(run, g)
    wait: dict[str, WaitRow] = {c: {"jobs": sum(w.values()), "p50_seconds": counted_percentile(w, 50),
                                    "p95_seconds": counted_percentile(w, 95)} for c, w in sorted(waits.items())}
    out: list[ReportDoc] = []
    for by in bys:  # each report owns its dicts (built again from the sums: nothing per row)
        types = {t: tot.doc(prices.get(t)) for t, tot in sorted(per_type.items())}
        total_row = total.doc()
        costs = [row["cost"] for row in types.values() if "cost" in row]
        if costs:
            total_row["cost"] = _r(sum(costs), 4)
        out.append({"schema": SCHEMA, "since": since, "until": until, "by": by, "currency": currency,
                    "total": total_row, "types": types,
                    "groups": {k: v.doc() for k, v in sorted(groups[by].items())} if by is not None else {},
                    "wait": {c: {**w} for c, w in wait.items()},
                    "days": {_day(d * 86400): t.day() for d, t in sorted(days.items())}})
    return out


def _h(x: float | None) -> str:
    return "-" if x is None else f"{x:,.2f}"


def _p(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def _dur(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{s / 3600:.1f}h" if s >= 3600 else f"{s / 60:.1f}m" if s >= 60 else f"{s:.0f}s"


def lines(doc: ReportDoc) -> list[str]:
    """The text view."""
    t = doc["total"]
    cur = f" {doc['currency']}" if doc.get("currency") else ""
    out = [f"GPU usage {doc['since'] or '-'} .. {doc['until'] or 'now'}: {t['jobs']} GPU jobs, "
           f"{_h(t['gpu_hours'])} GPU-hours allocated, {_h(t['effective_gpu_hours'])} effective, E = "
           f"{_p(t['efficiency'])}, idle {_h(t['idle_gpu_hours'])} GPU-hours",
           f"stats coverage: {_h(t['gpu_hours_with_stats'])} GPU-hours with stats, {_h(t['gpu_hours_without_stats'])} "
           f"without (not in E)",
           f"preemptions: {t['preemptions']}, costing at most {_h(t['preempted_gpu_hours'])} GPU-hours "
           f"(their whole run time: an upper bound)"]
    hdr = f"{'':16} {'GPU-h':>10} {'eff GPU-h':>10} {'E':>7} {'idle GPU-h':>10} {'no stats':>9}"
    for title, table in (("GPU type", doc["types"]), (f"by {doc['by']}", doc["groups"])):
        if not table:
            continue
        out += ["", f"{title:16}" + hdr[16:] + ("  cost/eff GPU-h" if title == "GPU type" else "")]
        for key, row in table.items():
            cost = ""
            if "cost_per_effective_gpu_hour" in row:
                c = row["cost_per_effective_gpu_hour"]
                cost = f"  {'-' if c is None else f'{c:,.2f}'}{cur} (price {row['price_per_gpu_hour']:g}{cur})"
            out.append(f"{key[:16]:16} {_h(row['gpu_hours']):>10} {_h(row['effective_gpu_hours']):>10} "
                       f"{_p(row['efficiency']):>7} {_h(row['idle_gpu_hours']):>10} "
                       f"{_h(row['gpu_hours_without_stats']):>9}{cost}")
    if doc["wait"]:
        out += ["", f"{'queue wait':16} {'jobs':>6} {'p50':>8} {'p95':>8}"]
        for cls, w in doc["wait"].items():
            out.append(f"{cls[:16]:16} {w['jobs']:>6} {_dur(w['p50_seconds']):>8} {_dur(w['p95_seconds']):>8}")
    return out


__all__ = ["report", "reports", "ReportDoc", "UsageRow", "DayRow", "WaitRow",
           "runs", "iter_runs", "counted_percentile", "Run", "class_of", "percentile", "lines",
           "SCHEMA", "GROUP_KEYS"]
