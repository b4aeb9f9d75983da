# SPDX-License-Identifier: Apache-2.0
"""Routing: each trace job goes through the site's own classifier (the one gpusub and job_submit.lua
use), so partition, QOS, GPU type, node count and time limit are exactly what the policy decides.

The request built from a trace row: total GPUs (``--gpus``, typed when the trace names a type), the
node count when the trace gives more than one (``-N``), the fraction, partition, QOS, account, user,
and the time limit: the trace's, else :func:`~slurm_gpu.sim.traces.derive_time_limit`. When a
derived limit is over the partition's or QOS's limit the job is routed again with the limit capped
there (a real user would have asked for at most the limit). A rejected job is not simulated.
"""

from __future__ import annotations

from slurm_gpu.plain import NamedTuple
from slurm_gpu.policy.classifier import classify
from slurm_gpu.policy.model import Policy
from slurm_gpu.request import Decision, JobRequest
from slurm_gpu.sim.traces import TraceJob, derive_time_limit


class Route(NamedTuple):
    """Where the policy sends a job, and with what."""

    job_class: str
    partition: str
    qos: str | None
    gpu_type: str | None
    nodes: int
    gpus_per_node: int  # whole GPUs per node (0: CPU-only or a MIG slice)
    mig_slices: int  # compute slices of 7 of one GPU (a MIG job), else 0
    time_limit_s: int | None  # None: no limit


def request_of(job: TraceJob, limit_min: int | None) -> JobRequest:
    whole = job.gpu_fraction is None and job.gpus > 0
    return JobRequest(
        gpus=job.gpus if whole else None,
        gpu_type=job.gpu_type, gpu_types=(job.gpu_type,) if job.gpu_type else (),
        gpus_by_type=((job.gpu_type, job.gpus),) if whole else (),
        gpu_fraction=job.gpu_fraction,
        nodes=job.nodes if job.nodes and job.nodes > 1 else None,
        partition=job.partition, partitions=(job.partition,) if job.partition else (),
        qos=job.qos, account=job.account, user=job.user,
        time_limit_min=limit_min)


def _limit_min(job: TraceJob) -> int:
    secs = job.time_limit_s if job.time_limit_s is not None else derive_time_limit(job.duration)
    return max(1, -(-secs // 60))


def _time_of(decision: Decision, asked: int | None) -> int | None:
    for opt in decision.added_options:
        if opt.startswith("--time="):
            from slurm_gpu.units import parse_time_minutes

            asked = parse_time_minutes(opt.removeprefix("--time="))
    return None if asked is None else asked * 60


def _cap(policy: Policy, decision: Decision) -> int | None:
    part, qos = policy.partition(decision.partition), policy.qos_named(decision.qos)
    caps = [v for v in (part.max_time_min if part else None, qos.max_wall_min if qos else None) if v is not None]
    return min(caps) if caps else None


def route_request(request: JobRequest, policy: Policy, derived: bool) -> Route | str:
    """The route of one request, or the rejection message."""
    decision = classify(request, policy)
    if not decision.accepted and derived and request.time_limit_min is not None:
        probe = classify(request._replace(time_limit_min=None), policy)
        cap = _cap(policy, probe) if probe.accepted else None
        if cap is not None and cap < request.time_limit_min:
            request = request._replace(time_limit_min=cap)
            decision = classify(request, policy)
    if not decision.accepted:
        return decision.message or "rejected"
    assert decision.partition is not None and decision.job_class is not None
    gres = decision.gres or ""
    slices = 0
    per_node = 0
    if gres.startswith("gpu:") and gres.count(":") == 2:
        gtype = gres.split(":")[1]
        mig = policy.mig_type(gtype)
        if mig is not None:
            slices = mig[2]
        else:
            per_node = int(gres.split(":")[2])
    elif gres.startswith("mps:"):
        return "MPS shares are not simulated"
    elif gres:
        return f"several GPU types in one job are not simulated ({gres})"
    nodes = request.nodes or (-(-decision.gpus // per_node) if per_node else 1)
    return Route(decision.job_class, decision.partition, decision.qos, decision.gpu_type, nodes, per_node,
                 slices, _time_of(decision, request.time_limit_min))


class Router:
    """Routes trace jobs; identical requests are classified once (a trace repeats a few shapes)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._seen: dict[tuple[JobRequest, bool], Route | str] = {}

    def route(self, job: TraceJob) -> Route | str:
        derived = job.time_limit_s is None
        request = request_of(job, _limit_min(job))
        key = (request, derived)
        hit = self._seen.get(key)
        if hit is None:
            hit = self._seen[key] = route_request(request, self.policy, derived)
        return hit
