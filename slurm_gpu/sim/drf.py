# SPDX-License-Identifier: Apache-2.0
"""Dominant Resource Fairness (Ghodsi et al., NSDI'11) as the order of pending jobs, for comparison with
Slurm's fair share (``--allocator drf``; pure).

An account's dominant share = the largest of its running GPUs, CPUs and memory over the cluster's
(a resource the cluster has none of is left out), divided by its weight (its normalised shares; 1 by
default: plain DRF). DRF has no history: only what runs now counts. The order is progressive filling:
take the account with the lowest dominant share, append its oldest pending job, add that job's demand
to the account as if it started, and repeat; ties go to the older job. Partition PriorityTier still
comes first (tiers decide preemption in Slurm, not fairness); DRF replaces the multifactor priority
within a tier. The main scheduler and backfill then run on this order as they do on the priority order.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

from slurm_gpu.sim.params import SimJob

Demand = tuple[float, float, float]  # GPUs, CPUs, memory (GB)


def demand(job: SimJob) -> Demand:
    return (job.gpus, float(job.cpus), job.mem_gb)


def dominant_share(use: Sequence[float], capacity: Demand, weight: float = 1.0) -> float:
    share = max((u / c for u, c in zip(use, capacity, strict=True) if c > 0), default=0.0)
    return share / weight if weight > 0 else float("inf")


def entity(job: SimJob) -> str:
    return job.account or ""


def drf_order(pending: Sequence[SimJob], in_use: Mapping[str, Sequence[float]], capacity: Demand,
              weights: Mapping[str, float] | None = None) -> list[SimJob]:
    """``pending`` in DRF order (per partition tier, highest first). ``in_use``: each account's running
    (GPUs, CPUs, memory)."""
    weights = weights or {}
    tiers: dict[int, dict[str, list[SimJob]]] = {}
    for job in pending:
        tiers.setdefault(job.tier, {}).setdefault(entity(job), []).append(job)
    out: list[SimJob] = []
    for tier in sorted(tiers, reverse=True):
        queues = tiers[tier]
        use: dict[str, list[float]] = {}
        heap: list[tuple[float, int, int, str]] = []
        for name, jobs in queues.items():
            jobs.sort(key=lambda j: (j.submit, j.idx))
            use[name] = list(in_use.get(name, (0.0, 0.0, 0.0)))
            first = jobs[0]
            heap.append((dominant_share(use[name], capacity, weights.get(name, 1.0)), first.submit, first.idx, name))
        heapq.heapify(heap)
        pos = dict.fromkeys(queues, 0)
        while heap:
            _, _, _, name = heapq.heappop(heap)
            job = queues[name][pos[name]]
            out.append(job)
            pos[name] += 1
            u = use[name]
            for k, d in enumerate(demand(job)):
                u[k] += d
            if pos[name] < len(queues[name]):
                nxt = queues[name][pos[name]]
                heapq.heappush(heap, (dominant_share(u, capacity, weights.get(name, 1.0)), nxt.submit, nxt.idx, name))
    return out
