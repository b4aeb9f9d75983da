# SPDX-License-Identifier: Apache-2.0
"""The simulator's outputs as data: jobs.csv text, the summary (summary.json) and the table of
differences between policies (pure; sim/run_files.py writes them)."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence

from slurm_gpu.csv_cells import row
from slurm_gpu.jsontypes import JsonObject, JsonValue, json_at, json_number, json_object
from slurm_gpu.sim.engine import Result
from slurm_gpu.sim.params import SimJob
from slurm_gpu.sim.traces import format_time

JOBS_COLUMNS = ("job_id", "submit_time", "start_time", "end_time", "partition", "qos", "nodes", "gpus",
                "preempted", "requeues")


def jobs_csv(result: Result, time_format: str) -> str:
    """One row per simulated job, in trace order; start/end of the last run."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(JOBS_COLUMNS)
    for j in result.jobs:
        def t(v: int | None) -> str:
            return "" if v is None else format_time(v, time_format)

        w.writerow(row((j.job_id, t(j.submit), t(j.start), t(j.end), j.partition, j.qos or "", j.nodes,
                        f"{j.gpus:g}", j.preempted, j.requeues)))  # trace text: no spreadsheet formulas
    return out.getvalue()


def rejected_csv(result: Result) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(("job_id", "line", "reason"))
    for tj, why in result.rejected:
        w.writerow(row((tj.job_id, tj.line, why)))
    return out.getvalue()


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100), nearest rank; None for no values."""
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, -(-len(s) * q // 100) - 1))
    return float(s[int(k)])


def _stats(jobs: Sequence[SimJob], span: float, gpus: int, prices: dict[str, float] | None = None) -> JsonObject:
    done = [j for j in jobs if j.first_start is not None and j.end is not None]
    waits = [float(j.first_start - j.submit) for j in done if j.first_start is not None]
    jct = [float(j.end - j.submit) for j in done if j.end is not None]
    gpu_s = sum(j.gpu_s for j in jobs)
    lost_s = sum(j.lost_gpu_s for j in jobs)
    out: JsonObject = {
        "jobs": len(jobs),
        "started": len(done),
        "wait_s": {"p50": percentile(waits, 50), "p95": percentile(waits, 95),
                   "mean": sum(waits) / len(waits) if waits else None},
        "jct_s": {"p50": percentile(jct, 50), "p95": percentile(jct, 95),
                  "mean": sum(jct) / len(jct) if jct else None},
        "gpu_hours": round(gpu_s / 3600, 3),
        "gpu_utilisation": round(gpu_s / (gpus * span), 4) if gpus and span > 0 else None,
        "preemptions": sum(j.preempted for j in jobs),
        "requeues": sum(j.requeues for j in jobs),
        "lost_gpu_hours": round(lost_s / 3600, 3),
        "effective_gpu_hours": round((gpu_s - lost_s) / 3600, 3),
        "timeouts": sum(1 for j in jobs if j.state == "TIMEOUT"),
        "cancelled_by_preemption": sum(1 for j in jobs if j.state == "PREEMPTED"),
    }
    if prices:
        priced = [j for j in jobs if (j.ran_type or j.gpu_type or "") in prices]
        cost = sum(prices[j.ran_type or j.gpu_type or ""] * j.gpu_s for j in priced) / 3600
        eff = sum(j.gpu_s - j.lost_gpu_s for j in priced) / 3600
        out["cost"] = round(cost, 4)
        out["cost_per_effective_gpu_hour"] = round(cost / eff, 4) if eff > 0 else None
    return out


def fragmentation(result: Result) -> JsonObject:
    """The cluster view's fragmentation over time (docs/cluster.md): at each sample (every
    PriorityCalcPeriod), the share of free GPUs on nodes with fewer than k free, for k = the GPUs of the
    largest node (``k_node``) and weighted by the jobs' GPUs per node (``job_mix``: sum_k p_k x frag[k]);
    means weighted by the time to the next sample; ``series``: [seconds from the first submit, GPUs in use,
    frag k_node, frag job_mix], at most 240 points."""
    samples = result.samples
    if not samples:
        return {}
    kmax = len(samples[0][2]) - 1
    asks: dict[int, int] = {}
    for j in result.jobs:
        if j.per_node:
            k = min(j.per_node, kmax)
            asks[k] = asks.get(k, 0) + 1
    n = sum(asks.values())

    def frag(hist: tuple[int, ...], k: int) -> float:
        free = sum(f * c for f, c in enumerate(hist))
        return sum(f * c for f, c in enumerate(hist[:k])) / free if free else 0.0

    rows = []
    for t, used, hist in samples:
        mix = sum(c * frag(hist, k) for k, c in asks.items()) / n if n else None
        rows.append((t - result.begin, used, frag(hist, kmax), mix))
    weights = [max(0, b[0] - a[0]) for a, b in zip(rows, rows[1:], strict=False)] + [0]
    wsum = sum(weights)

    def mean(col: int) -> float | None:
        vals: list[tuple[float, int]] = []
        for r, w in zip(rows, weights, strict=True):
            v = r[col]
            if v is not None:
                vals.append((float(v), w))
        if not vals:
            return None
        total = sum(v * w for v, w in vals) / wsum if wsum else sum(v for v, _ in vals) / len(vals)
        return round(total, 4)

    step = max(1, -(-len(rows) // 240))
    return {"k_node": kmax, "samples": len(rows), "mean_k_node": mean(2), "mean_job_mix": mean(3),
            "p95_k_node": percentile([r[2] for r in rows], 95), "max_k_node": round(max(r[2] for r in rows), 4),
            "series": [[t, u, round(f, 4), None if m is None else round(m, 4)] for t, u, f, m in rows[::step]]}


def jain(values: Sequence[float]) -> float | None:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all are equal, 1/n when one has everything."""
    sq = sum(x * x for x in values)
    return round(sum(values) ** 2 / (len(values) * sq), 4) if values and sq > 0 else None


def fairness(result: Result) -> JsonObject:
    """Entitlement (normalised shares) against usage (share of the GPU-hours held) per account, and Jain's
    index over usage / entitlement of the accounts that ran jobs."""
    used: dict[str, float] = {}
    for j in result.jobs:
        used[j.account or ""] = used.get(j.account or "", 0.0) + j.gpu_s
    total = sum(used.values())
    ent = dict(result.entitlement)
    accounts = {a: {"entitled": round(ent.get(a, 0.0), 4), "used": round(u / total, 4) if total else 0.0,
                    "gpu_hours": round(u / 3600, 3)} for a, u in sorted(used.items())}
    ratios = [used[a] / total / ent[a] for a in used if total and ent.get(a, 0.0) > 0]
    return {"jain": jain(ratios), "accounts": accounts}


def summary(result: Result, policy_name: str) -> JsonObject:
    """Per class, per partition and per account: wait and JCT (p50/p95, seconds), GPU utilisation (GPU-seconds held
    / (cluster GPUs x makespan)), preemptions and the GPU-hours they lost, effective GPU-hours (held -
    lost) and, with the policy's ``prices``, cost (price x GPU-hours held) and cost per effective GPU-hour;
    fragmentation over time and fairness per account (:func:`fragmentation`, :func:`fairness`)."""
    span = float(result.finish - result.begin)
    by_class: dict[str, list[SimJob]] = {}
    by_part: dict[str, list[SimJob]] = {}
    by_account: dict[str, list[SimJob]] = {}
    for j in result.jobs:
        by_class.setdefault(j.job_class, []).append(j)
        by_part.setdefault(j.partition, []).append(j)
        by_account.setdefault(j.account or "", []).append(j)
    prices = dict(result.prices)
    return {
        "policy": policy_name,
        "gpus": result.gpus,
        "makespan_s": span,
        "rejected": len(result.rejected),
        "skipped": result.skipped,
        "currency": result.currency,
        "all": _stats(result.jobs, span, result.gpus, prices),
        "classes": {k: _stats(v, span, result.gpus, prices) for k, v in sorted(by_class.items())},
        "partitions": {k: _stats(v, span, result.gpus, prices) for k, v in sorted(by_part.items())},
        "accounts": {k: _stats(v, span, result.gpus, prices) for k, v in sorted(by_account.items())},
        "fragmentation": fragmentation(result),
        "fairness": fairness(result),
    }


ROWS = (("jobs started", ("started",)), ("wait p50 (s)", ("wait_s", "p50")), ("wait p95 (s)", ("wait_s", "p95")),
        ("JCT p50 (s)", ("jct_s", "p50")), ("JCT p95 (s)", ("jct_s", "p95")),
        ("GPU utilisation", ("gpu_utilisation",)), ("preemptions", ("preemptions",)),
        ("lost GPU-hours", ("lost_gpu_hours",)), ("cost / effective GPU-h", ("cost_per_effective_gpu_hour",)))
TOP_ROWS: tuple[tuple[str, tuple[str, ...]], ...] = (("fragmentation (mean, k=node)", ("fragmentation", "mean_k_node")),
            ("fragmentation (mean, job mix)", ("fragmentation", "mean_job_mix")),
            ("fairness: Jain's index", ("fairness", "jain")))








def _fmt(v: JsonValue) -> str:
    if v is None:
        return "-"
    return f"{v:g}" if isinstance(v, float) else str(v)


def differences(summaries: Sequence[Mapping[str, JsonValue]]) -> str:
    """A text table of the policies side by side (overall, then per class), with the change of each
    policy against the first."""
    names = [str(s["policy"]) for s in summaries]
    classes = sorted({c for s in summaries for c in json_object(s["classes"])})
    scopes: list[tuple[str, tuple[str, ...]]] = [("all", ("all",))] + [(f"class {c}", ("classes", c)) for c in classes]
    lines = []
    head = ["", *names] + [f"{n} - {names[0]}" for n in names[1:]]
    rows: list[list[str]] = [head]
    rows.append(["rejected", *(_fmt(s["rejected"]) for s in summaries)]
                + [_fmt(json_number(s["rejected"]) - json_number(summaries[0]["rejected"])) for s in summaries[1:]])
    for label, top in TOP_ROWS:
        vals = [json_at(s, top) for s in summaries]
        delta = [_fmt(round(v - vals[0], 4)) if isinstance(v, (int, float)) and isinstance(vals[0], (int, float))
                 else "-" for v in vals[1:]]
        rows.append([label, *(_fmt(v) for v in vals), *delta])
    for scope, where in scopes:
        for label, path in ROWS:
            vals = [json_at(s, where + path) for s in summaries]
            delta = [_fmt(round(v - vals[0], 4)) if isinstance(v, (int, float)) and isinstance(vals[0], (int, float))
                     else "-" for v in vals[1:]]
            rows.append([f"{scope}: {label}", *(_fmt(v) for v in vals), *delta])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for r in rows:
        cells = (c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        lines.append("  ".join(cells))
    return "\n".join(lines) + "\n"
