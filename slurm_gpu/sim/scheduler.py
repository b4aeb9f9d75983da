# SPDX-License-Identifier: Apache-2.0
"""The main scheduler (Slurm's ``schedule()``) and preemption.

Main pass: pending jobs in order (partition PriorityTier, priority, submit), the first
default_queue_depth + 1 of them (the whole queue once per sched_interval); a job starts when its
nodes fit now (all its nodes at once: a gang start). When a job cannot start, its partition is
blocked for the rest of the pass and its partition's nodes are withheld from lower jobs of other
partitions (Slurm keeps lower jobs off the resources a higher job waits for; backfill may still use
them where no reservation is delayed).

Preemption (``PreemptType``): ``partition_prio`` -- a job may preempt running jobs of preemptible
partitions with a lower PriorityTier; ``qos`` -- jobs whose QOS is in its QOS's ``preempts``. Victims
are taken lowest tier first, then the most recently started (the least work lost), until the job
fits. Each victim gets its partition's GraceTime, then is requeued (mode REQUEUE, while under the
policy's ``max_requeues``) or cancelled; the preemptor starts when the GPUs are free.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from slurm_gpu.sim.cluster import Cluster
from slurm_gpu.sim.params import Params, SimJob
from slurm_gpu.sim.queue import View, scan


def can_preempt(params: Params, job: SimJob, victim: SimJob) -> bool:
    if params.preempt_type == "partition_prio":
        return victim.preemptible and victim.tier < job.tier
    if params.preempt_type == "qos":
        return victim.qos is not None and victim.qos in job.preempts
    return False


def choose_victims(params: Params, job: SimJob, cluster: Cluster, running: Iterable[SimJob]) -> list[SimJob]:
    """The running jobs to preempt so that ``job`` fits, or [] when no set of them makes it fit."""
    group = set(cluster.group(job.partition, job.gpu_type))
    cands = [v for v in running if v.state == "RUNNING" and can_preempt(params, job, v)
             and any(i in group for i, *_ in v.alloc)]
    if not cands:
        return []
    cands.sort(key=lambda v: (v.tier, -(v.start or 0), -v.idx))
    taken: list[SimJob] = []
    fits = False
    for v in cands:
        cluster.release(v.alloc)
        taken.append(v)
        if cluster.pick(tuple(sorted(group)), job.nodes, job.per_node, job.slices) is not None:
            fits = True
            break
    for v in reversed(taken):
        cluster.take(v.alloc)
    return taken if fits else []


def main_pass(pending: Iterable[SimJob], cluster: Cluster, params: Params, running: Iterable[SimJob],
              start: Callable[[SimJob, list[int]], None],
              preempt: Callable[[SimJob, list[SimJob]], None],
              under_limit: Callable[[SimJob], bool] | None = None,
              parts: set[str] | None = None, depth: int | None = None) -> int:
    """One pass of the main scheduler over ``pending`` (in order); returns the number of jobs started.
    A job over a per-user limit (``under_limit`` false) is passed over without blocking anything, also
    when its nodes are busy (seen in the lab's slurmctld log, 22.05.8: a 2-GPU debug job over the debug
    QOS's limit, its node with 1 GPU free, did not keep the main scheduler from starting the 1-GPU debug
    job after it in the same partition).
    ``parts``: the partitions of the pending jobs (default: read from ``pending``). ``depth``
    (default_queue_depth): the pass stops after testing that many jobs and one more, as Slurm's loop
    does (``job_depth++ > def_job_limit``: every job taken from the queue counts, blocked ones too);
    None: the whole queue (sched_interval's full pass)."""
    blocked_parts: set[str] = set()
    withheld: set[int] = set()
    started = 0
    if parts is None:
        pending = list(pending)
        parts = {j.partition for j in pending if j.state == "PENDING"}
    jobs = pending.scan(blocked_parts, depth) if isinstance(pending, View) else scan(pending, blocked_parts, depth)
    for job in jobs:
        if under_limit is not None and not under_limit(job):
            continue
        group = cluster.group(job.partition, job.gpu_type)
        allowed = frozenset(i for i in group if i not in withheld) if withheld else None
        chosen = cluster.pick(group, job.nodes, job.per_node, job.slices, allowed)
        if chosen is not None:
            start(job, chosen)
            started += 1
            continue
        if not job.waiting and params.preempt_type != "off":
            victims = choose_victims(params, job, cluster, running)
            if victims:
                preempt(job, victims)
        blocked_parts.add(job.partition)
        withheld.update(cluster.group(job.partition, None))
        if blocked_parts >= parts:
            break
    return started
