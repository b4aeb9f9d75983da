# SPDX-License-Identifier: Apache-2.0
"""The simulator's outputs as data: jobs.csv text, the summary (summary.json) and the table of
differences between policies (pure; app/simulate.py writes them)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

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

        w.writerow((j.job_id, t(j.submit), t(j.start), t(j.end), j.partition, j.qos or "", j.nodes,
                    f"{j.gpus:g}", j.preempted, j.requeues))
    return out.getvalue()


def rejected_csv(result: Result) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(("job_id", "line", "reason"))
    for tj, why in result.rejected:
        w.writerow((tj.job_id, tj.line, why))
    return out.getvalue()


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100), nearest rank; None for no values."""
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, -(-len(s) * q // 100) - 1))
    return float(s[int(k)])


def _stats(jobs: Sequence[SimJob], span: float, gpus: int) -> dict[str, Any]:
    done = [j for j in jobs if j.first_start is not None and j.end is not None]
    waits = [float(j.first_start - j.submit) for j in done if j.first_start is not None]
    jct = [float(j.end - j.submit) for j in done if j.end is not None]
    gpu_s = sum(j.gpu_s for j in jobs)
    return {
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
        "lost_gpu_hours": round(sum(j.lost_gpu_s for j in jobs) / 3600, 3),
        "timeouts": sum(1 for j in jobs if j.state == "TIMEOUT"),
        "cancelled_by_preemption": sum(1 for j in jobs if j.state == "PREEMPTED"),
    }


def summary(result: Result, policy_name: str) -> dict[str, Any]:
    """Per class and per partition: wait and JCT (p50/p95, seconds), GPU utilisation (GPU-seconds held
    / (cluster GPUs x makespan)), preemptions and the GPU-hours they lost."""
    span = float(result.finish - result.begin)
    by_class: dict[str, list[SimJob]] = {}
    by_part: dict[str, list[SimJob]] = {}
    for j in result.jobs:
        by_class.setdefault(j.job_class, []).append(j)
        by_part.setdefault(j.partition, []).append(j)
    return {
        "policy": policy_name,
        "gpus": result.gpus,
        "makespan_s": span,
        "rejected": len(result.rejected),
        "skipped": result.skipped,
        "all": _stats(result.jobs, span, result.gpus),
        "classes": {k: _stats(v, span, result.gpus) for k, v in sorted(by_class.items())},
        "partitions": {k: _stats(v, span, result.gpus) for k, v in sorted(by_part.items())},
    }


ROWS = (("jobs started", ("started",)), ("wait p50 (s)", ("wait_s", "p50")), ("wait p95 (s)", ("wait_s", "p95")),
        ("JCT p50 (s)", ("jct_s", "p50")), ("JCT p95 (s)", ("jct_s", "p95")),
        ("GPU utilisation", ("gpu_utilisation",)), ("preemptions", ("preemptions",)),
        ("lost GPU-hours", ("lost_gpu_hours",)))


def _get(d: dict[str, Any], path: tuple[str, ...]) -> Any:
    for k in path:
        d = d.get(k) if isinstance(d, dict) else None  # type: ignore[assignment]
    return d


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    return f"{v:g}" if isinstance(v, float) else str(v)


def differences(summaries: Sequence[dict[str, Any]]) -> str:
    """A text table of the policies side by side (overall, then per class), with the change of each
    policy against the first."""
    names = [s["policy"] for s in summaries]
    classes = sorted({c for s in summaries for c in s["classes"]})
    scopes: list[tuple[str, tuple[str, ...]]] = [("all", ("all",))] + [(f"class {c}", ("classes", c)) for c in classes]
    lines = []
    head = ["", *names] + [f"{n} - {names[0]}" for n in names[1:]]
    rows: list[list[str]] = [head]
    rows.append(["rejected", *(_fmt(s["rejected"]) for s in summaries)]
                + [_fmt(s["rejected"] - summaries[0]["rejected"]) for s in summaries[1:]])
    for scope, where in scopes:
        for label, path in ROWS:
            vals = [_get(s, where + path) for s in summaries]
            delta = [_fmt(round(v - vals[0], 4)) if isinstance(v, (int, float)) and isinstance(vals[0], (int, float))
                     else "-" for v in vals[1:]]
            rows.append([f"{scope}: {label}", *(_fmt(v) for v in vals), *delta])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for r in rows:
        cells = (c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        lines.append("  ".join(cells))
    return "\n".join(lines) + "\n"
