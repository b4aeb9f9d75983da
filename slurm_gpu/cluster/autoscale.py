# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu report --autoscale``: a scaling signal per GPU type, pure (docs/report.md "Autoscale").

In: the job records (:func:`slurm_gpu.slurm.records.read_jobs`'s fields; pending jobs: their whole GPU
request from their TRES, read by :func:`slurm_gpu.slurm.records.job_tres`; their SubmitTime, partition and
QOS), the report document of
the window (its per-type efficiency E), the policy (thresholds, class targets) and the time now.

Per GPU type: ``pending_jobs``, ``pending_gpus`` (the demand that could not start), ``waiting_over_target``
(pending jobs that waited longer than their class's ``target_wait``), ``efficiency`` (E of what was
allocated in the window) and ``recommendation``: ``up`` when more than ``autoscale.min_waiting_jobs``
jobs waited over target; else ``down`` when E < ``autoscale.scale_down_below`` and nothing is pending;
else ``hold``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, TypedDict

from slurm_gpu.cluster.report import ReportDoc, class_of
from slurm_gpu.slurm.records import job_tres
from slurm_gpu.slurm.sacct import sacct_time, tres_gpus

if TYPE_CHECKING:
    from slurm_gpu.policy.model import Policy

SCHEMA = "slurm-gpu.autoscale/1"
DEFAULT_MIN_WAITING = 0
DEFAULT_TARGET_WAIT_S = 3600
DEFAULT_SCALE_DOWN_BELOW = 0.7


class Demand(TypedDict):
    """The pending jobs of one GPU type."""

    pending_jobs: int
    pending_gpus: int  # their whole GPU request
    waiting_over_target: int  # those that waited longer than their class's target


class TypeSignal(Demand):
    """One GPU type's row of the --autoscale document."""

    efficiency: float | None  # E of the window (the report's), None: no GPU stats
    gpu_hours: float
    recommendation: str  # up, down or hold
    reason: str


class Thresholds(TypedDict):
    min_waiting_jobs: int
    scale_down_below: float
    default_target_wait_seconds: int


class AutoscaleDoc(TypedDict):
    """The ``slurm-gpu report --autoscale --json`` document (schema ``slurm-gpu.autoscale/1``)."""

    schema: str
    since: str
    thresholds: Thresholds
    types: dict[str, TypeSignal]


def _no_demand() -> Demand:
    return {"pending_jobs": 0, "pending_gpus": 0, "waiting_over_target": 0}


def thresholds(policy: Policy | None = None) -> tuple[int, int, float]:
    a = getattr(policy, "autoscale", None)
    if a is None:
        return DEFAULT_MIN_WAITING, DEFAULT_TARGET_WAIT_S, DEFAULT_SCALE_DOWN_BELOW
    return a.min_waiting_jobs, a.target_wait_s, a.scale_down_below


def target_wait(job_class: str, policy: Policy | None = None) -> int:
    c = policy.job_class(job_class) if policy is not None else None
    if c is not None and c.target_wait_s is not None:
        return int(c.target_wait_s)
    return thresholds(policy)[1]


def pending_demand(jobs: Iterable[Mapping[str, str]], now: float,
                   policy: Policy | None = None) -> dict[str, Demand]:
    """GPU type -> pending jobs, GPUs they ask for (the job's whole request: its TRES, which 22.05 prints
    as ``TRES=`` and 24.11 as ``ReqTRES=`` while pending), and how many waited over their class's target."""
    out: dict[str, Demand] = {}
    for fields in jobs:
        if (fields.get("JobState") or "").split(" ")[0] != "PENDING":
            continue
        submit = sacct_time(fields.get("SubmitTime"))
        cls = class_of(fields.get("Partition", ""), fields.get("QOS", ""), policy)
        over = submit is not None and now - submit > target_wait(cls, policy)
        tres = ",".join(f"{k}={v}" for k, v in job_tres(fields).items())
        for gtype, count in tres_gpus(tres).items():
            d = out.setdefault(gtype, _no_demand())
            d["pending_jobs"] += 1
            d["pending_gpus"] += count
            d["waiting_over_target"] += int(over)
    return out


def autoscale(jobs: Iterable[Mapping[str, str]], report_doc: ReportDoc, now: float,
              policy: Policy | None = None) -> AutoscaleDoc:
    """The --autoscale document; ``jobs``: the job records' fields; ``report_doc``: the window's report."""
    k, _, below = thresholds(policy)
    demand = pending_demand(jobs, now, policy)
    types: dict[str, TypeSignal] = {}
    for t in sorted(set(demand) | set(report_doc["types"])):
        d = demand.get(t, _no_demand())
        usage = report_doc["types"].get(t)
        eff = None if usage is None else usage["efficiency"]
        if d["waiting_over_target"] > k:
            rec, why = "up", f"{d['waiting_over_target']} jobs waited longer than their target (more than {k})"
        elif eff is not None and eff < below and d["pending_jobs"] == 0:
            rec, why = "down", f"efficiency {eff * 100:.1f}% below {below * 100:.0f}% and no job waiting"
        else:
            rec = "hold"
            why = "efficiency unknown (no GPU stats)" if eff is None and not d["pending_jobs"] else \
                f"{d['waiting_over_target']} of {d['pending_jobs']} pending jobs over target (up when more than {k})"
        types[t] = {"pending_jobs": d["pending_jobs"], "pending_gpus": d["pending_gpus"],
                    "waiting_over_target": d["waiting_over_target"], "efficiency": eff,
                    "gpu_hours": 0.0 if usage is None else usage["gpu_hours"], "recommendation": rec, "reason": why}
    return {"schema": SCHEMA, "since": report_doc["since"], "thresholds": {
        "min_waiting_jobs": k, "scale_down_below": below, "default_target_wait_seconds": thresholds(policy)[1]},
        "types": types}


def lines(doc: AutoscaleDoc) -> list[str]:
    out = [f"{'GPU type':16} {'pending jobs':>12} {'GPUs asked':>10} {'over target':>11} {'E':>7}  recommendation"]
    for t, d in doc["types"].items():
        e = "-" if d["efficiency"] is None else f"{d['efficiency'] * 100:.1f}%"
        out.append(f"{t[:16]:16} {d['pending_jobs']:>12} {d['pending_gpus']:>10} {d['waiting_over_target']:>11} "
                   f"{e:>7}  {d['recommendation']}: {d['reason']}")
    return out


__all__ = ["autoscale", "AutoscaleDoc", "TypeSignal", "Demand", "Thresholds",
           "pending_demand", "lines", "SCHEMA", "thresholds", "target_wait"]
