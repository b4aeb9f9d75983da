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
from collections.abc import Iterator, Mapping, Sequence

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
    tiers: dict[int, dict[str, list[SimJob]]] = {}
    for job in pending:
        tiers.setdefault(job.tier, {}).setdefault(entity(job), []).append(job)
    for queues in tiers.values():
        for jobs in queues.values():
            jobs.sort(key=lambda j: (j.submit, j.idx))
    return list(drf_iter(tiers, in_use, capacity, weights))


def drf_iter(tiers: Mapping[int, Mapping[str, Sequence[SimJob]]], in_use: Mapping[str, Sequence[float]],
             capacity: Demand, weights: Mapping[str, float] | None = None) -> Iterator[SimJob]:
    """The DRF order, lazily: ``tiers`` maps a partition tier to each account's pending jobs, oldest first
    (submit, then trace order). ``in_use`` is read now (the jobs started while the order is read do not
    change it)."""
    snapshot = use_snapshot(tiers, in_use)
    return (job for tier in sorted(tiers, reverse=True)
            for job in fill_tier(tiers[tier], snapshot, capacity, weights or {}))


def use_snapshot(tiers: Mapping[int, Mapping[str, Sequence[SimJob]]],
                 in_use: Mapping[str, Sequence[float]]) -> dict[str, tuple[float, ...]]:
    """The running (GPUs, CPUs, memory) of the accounts with pending jobs, as of now."""
    return {name: tuple(u) for queues in tiers.values() for name in queues if (u := in_use.get(name)) is not None}


def fill_tier(queues: Mapping[str, Sequence[SimJob]], in_use: Mapping[str, Sequence[float]],
              capacity: Demand, weights: Mapping[str, float]) -> Iterator[SimJob]:
    """Progressive filling of one tier: the account with the lowest dominant share (ties: the older job)
    gives its oldest job, whose demand is added to the account's share; each tier starts from ``in_use``."""
    use: dict[str, list[float]] = {}
    heap: list[tuple[float, int, int, str]] = []
    for name, jobs in queues.items():
        if not jobs:
            continue
        use[name] = list(in_use.get(name, (0.0, 0.0, 0.0)))
        first = jobs[0]
        heap.append((dominant_share(use[name], capacity, weights.get(name, 1.0)), first.submit, first.idx, name))
    heapq.heapify(heap)
    pos = dict.fromkeys(queues, 0)
    while heap:
        _, _, _, name = heapq.heappop(heap)
        jobs = queues[name]
        job = jobs[pos[name]]
        yield job
        pos[name] += 1
        u = use[name]
        for k, d in enumerate(demand(job)):
            u[k] += d
        if pos[name] < len(jobs):
            nxt = jobs[pos[name]]
            heapq.heappush(heap, (dominant_share(u, capacity, weights.get(name, 1.0)), nxt.submit, nxt.idx, name))
