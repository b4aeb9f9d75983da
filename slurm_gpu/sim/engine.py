# SPDX-License-Identifier: Apache-2.0
"""The event loop: a heap of submit, end, preemption-end and backfill events, in simulated seconds.

At each time, ends come first (their GPUs are free for what is submitted at the same second), then
submits; then priorities are recomputed when PriorityCalcPeriod has passed, then the main scheduler
runs. Backfill runs at multiples of ``bf_interval`` after anything changed. A run lasts the job's
remaining work, cut at its time limit (state TIMEOUT); a preemption ends it after the grace time. A
run's GPUs are free ``release_s`` after its end (Slurm's COMPLETING; 0 by default).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Protocol

from slurm_gpu.plain import NamedTuple
from slurm_gpu.policy.model import Policy
from slurm_gpu.sim.backfill import backfill_pass
from slurm_gpu.sim.cluster import MIG_SLICES, Cluster
from slurm_gpu.sim.drf import demand
from slurm_gpu.sim.params import Params, SimJob
from slurm_gpu.sim.priority import Prioritiser, assoc_of
from slurm_gpu.sim.queue import Queue
from slurm_gpu.sim.routing import Route, Router
from slurm_gpu.sim.scheduler import main_pass
from slurm_gpu.sim.traces import Trace, TraceJob

# LIMIT_FREE: a run's end frees its GPUs from its QOS's per-user count at once (Slurm's job completion,
# acct_policy_job_fini); the nodes follow release_s later (END: COMPLETING, the epilog)
# MAIN: the main pass that an end triggers, sched_delay_s after it (Slurm queues the pass; ends within the
# delay are seen together)
# FULL: with sched_delay_s, the periodic full-queue pass at each multiple of sched_interval is its own event
# (slurmctld's background thread); without, it runs at the first event at or after each multiple
LIMIT_FREE, END, PREEMPT_END, SUBMIT, BACKFILL, MAIN, FULL = -1, 0, 1, 2, 3, 4, 5


Progress = Callable[[int, int, int, int], None]


class Routes(Protocol):
    def route(self, job: TraceJob) -> Route | str: ...


class Result(NamedTuple):
    jobs: tuple[SimJob, ...]  # in trace order
    rejected: tuple[tuple[TraceJob, str], ...]
    skipped: int  # jobs the trace says never ran
    gpus: int  # GPUs of the cluster
    begin: int  # first submit
    finish: int  # last end
    passes: int  # main and backfill passes (a main pass with nothing changed since the last is counted, not run)
    # (time, GPUs in use, nodes per count of free whole GPUs (index = free GPUs)), every PriorityCalcPeriod
    samples: tuple[tuple[int, int, tuple[int, ...]], ...] = ()
    prices: tuple[tuple[str, float], ...] = ()  # the policy's price per GPU-hour per GPU type
    currency: str = ""
    entitlement: tuple[tuple[str, float], ...] = ()  # each account's normalised shares


def make_job(idx: int, tj: TraceJob, route: Route, policy: Policy) -> SimJob:
    job = SimJob(idx, tj.job_id, tj.submit, max(0, tj.duration), route.time_limit_s)
    job.user, job.account, job.job_class = tj.user, tj.account, route.job_class
    job.partition, job.qos, job.gpu_type = route.partition, route.qos, route.gpu_type
    job.nodes, job.per_node, job.slices = route.nodes, route.gpus_per_node, route.mig_slices
    job.gpus = route.mig_slices / MIG_SLICES if route.mig_slices else float(route.nodes * route.gpus_per_node)
    part, qos = policy.partition(route.partition), policy.qos_named(route.qos)
    assert part is not None
    job.tier, job.preemptible, job.grace_s = part.priority_tier, part.preemptible, part.grace_time_s
    job.qos_prio = qos.priority if qos else 0
    job.preempts = qos.preempts if qos else ()
    job.preempt_mode = (qos.preempt_mode if qos and qos.preempt_mode else "requeue" if part.preemptible
                        else "cancel")
    job.max_requeues = policy.defaults.max_requeues
    per_gpu = policy.defaults.cpus_per_gpu
    job.cpus = tj.cpus if tj.cpus else (int(job.gpus * per_gpu) if isinstance(per_gpu, int) else 0)
    job.mem_gb = job.gpus * (policy.defaults.mem_per_gpu_mb or 0) / 1024
    return job


class Engine:
    def __init__(self, policy: Policy, params: Params) -> None:
        self.policy, self.params = policy, params
        self.cluster = Cluster(policy)
        self.heap: list[tuple[int, int, int, int, int]] = []  # (time, kind, seq, job index, run)
        self.seq = 0
        self.now = 0
        self.jobs: list[SimJob] = []
        self.pending: Queue | None = None  # made when the run starts (it needs the priorities)
        self.running: dict[int, SimJob] = {}
        self.preemptor: dict[int, SimJob] = {}
        # running jobs that some job may preempt (a preemptible partition, or a QOS some QOS preempts)
        self.victims: dict[int, SimJob] = {}
        self.preemptable_qos = {name for q in policy.qos for name in q.preempts}
        self.changed = False  # since the last backfill pass
        self.dirty = True  # since the last main pass (one with nothing changed since would find nothing)
        self.bf_due: int | None = None
        self.passes = 0
        self.started = 0  # jobs started at least once
        self.finish = 0
        self.prio: Prioritiser | None = None
        # QOS MaxTRESPerUser=gres/gpu (AccountingStorageEnforce=limits,qos): GPUs running per (QOS, user)
        self.user_max = {q.name: q.max_gpus_per_user for q in policy.qos if q.max_gpus_per_user is not None}
        self.user_gpus: dict[tuple[str | None, str | None], float] = {}
        # DRF: running (GPUs, CPUs, memory) per account, and the cluster's
        self.in_use: dict[str, list[float]] = {}
        per_gpu, mem = policy.defaults.cpus_per_gpu, policy.defaults.mem_per_gpu_mb or 0
        g = float(self.cluster.gpus)
        self.capacity = (g, g * per_gpu if isinstance(per_gpu, int) else 0.0, g * mem / 1024)
        self.samples: list[tuple[int, int, tuple[int, ...]]] = []
        self.in_backfill = False  # a backfill pass is running (SimJob.started_by)
        self.main_due: int | None = None  # the queued main pass after an end (sched_delay_s)
        self.full_due: int | None = None  # the queued full-queue pass (sched_delay_s > 0)

    def under_limit(self, job: SimJob) -> bool:
        """Whether starting ``job`` keeps its user within its QOS's GPUs per user (Slurm leaves a job over
        it pending, reason QOSMaxGRESPerUser, without blocking the jobs after it)."""
        cap = self.user_max.get(job.qos or "")
        return cap is None or self.user_gpus.get((job.qos, job.user), 0.0) + job.gpus <= cap

    def push(self, t: int, kind: int, idx: int = -1, run: int = 0) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, kind, self.seq, idx, run))

    # ---- job state changes ----

    def start(self, job: SimJob, chosen: list[int]) -> None:
        now = self.now
        job.alloc = self.cluster.allocate(chosen, job.per_node, job.slices)
        job.start = now
        job.ran_type = self.cluster.gpu_types[chosen[0]] if chosen else job.gpu_type
        if job.first_start is None:
            job.first_start = now
            job.started_by = "backfill" if self.in_backfill else "main"
            self.started += 1
        job.state = "RUNNING"
        job.run += 1
        length = job.work if job.limit is None else min(job.work, job.limit)
        job.end = now + length
        if job.qos in self.user_max:
            key = (job.qos, job.user)
            self.user_gpus[key] = self.user_gpus.get(key, 0.0) + job.gpus
            job.holds_limit = True
            if self.params.release_s > 0:
                self.push(job.end, LIMIT_FREE, job.idx, job.run)
        self.running[job.idx] = job
        if self.pending is not None:
            self.pending.remove(job)
        if self.params.allocator == "drf":
            u = self.in_use.setdefault(job.account or "", [0.0, 0.0, 0.0])
            for k, d in enumerate(demand(job)):
                u[k] += d
        if job.preemptible or job.qos in self.preemptable_qos:
            self.victims[job.idx] = job
        self.push(job.end + self.params.release_s, END, job.idx, job.run)
        self.changed = self.dirty = True

    def preempt(self, job: SimJob, victims: list[SimJob]) -> None:
        for v in victims:
            v.state = "PREEMPTING"
            v.end = self.now + v.grace_s
            self.push(v.end + self.params.release_s, PREEMPT_END, v.idx, v.run)
            self.preemptor[v.idx] = job
            job.waiting += 1
        self.dirty = True

    def _stop(self, job: SimJob) -> int:
        """Free the run's GPUs; returns its seconds."""
        assert job.start is not None
        self.cluster.release(job.alloc)
        job.alloc = ()
        del self.running[job.idx]
        self.free_limit(job)
        self.victims.pop(job.idx, None)
        if self.params.allocator == "drf":
            u = self.in_use[job.account or ""]
            for k, d in enumerate(demand(job)):
                u[k] -= d
        ended = self.now - self.params.release_s  # the GPUs were held release_s longer (COMPLETING)
        ran = ended - job.start
        job.end = ended
        job.gpu_s += job.gpus * ran
        if self.prio is not None:
            self.prio.charge(job, ran, self.now)
        by = self.preemptor.pop(job.idx, None)
        if by is not None:
            by.waiting -= 1
        self.finish = max(self.finish, ended)
        self.changed = True
        if self.params.sched_delay_s > 0:
            self.queue_main(self.now + self.params.sched_delay_s)
        else:
            self.dirty = True
        return ran

    def queue_main(self, due: int) -> None:
        """Queue the main pass an event triggers: one queued pass sees every event before it, and an
        event that wants it sooner (an end after a submission) moves it earlier."""
        if self.main_due is None or due < self.main_due:
            self.main_due = due
            self.push(due, MAIN)

    def free_limit(self, job: SimJob) -> None:
        """The run no longer counts against its QOS's GPUs per user."""
        if job.holds_limit:
            job.holds_limit = False
            self.user_gpus[(job.qos, job.user)] -= job.gpus
            self.changed = True
            if self.params.sched_delay_s <= 0:
                self.dirty = True

    def on_end(self, job: SimJob) -> None:
        ran = self._stop(job)
        job.work -= ran
        job.state = "TIMEOUT" if job.work > 0 else "COMPLETED"

    def on_preempt_end(self, job: SimJob) -> None:
        ran = self._stop(job)
        ckpt = self.params.ckpt_interval_s
        saved = min(job.work, (ran // ckpt) * ckpt) if ckpt > 0 else 0
        job.work -= saved
        job.lost_gpu_s += job.gpus * (ran - saved)
        job.preempted += 1
        if job.preempt_mode == "requeue" and job.requeues < job.max_requeues:
            job.requeues += 1
            job.state = "PENDING"
            job.eligible = self.now
            assert self.pending is not None
            self.pending.add(job, self.now)
        else:
            job.state = "PREEMPTED"

    # ---- the loop ----

    def run(self, trace: Trace, router: Routes | None = None, progress: Progress | None = None) -> Result:
        """Simulate the trace. ``progress``: called every 1,024 event times with (simulated seconds since the
        first submit, jobs started at least once, jobs, jobs pending)."""
        router = router or Router(self.policy)
        rejected: list[tuple[TraceJob, str]] = []
        for tj in trace.jobs:
            route = router.route(tj)
            if isinstance(route, str):
                rejected.append((tj, route))
                continue
            job = make_job(len(self.jobs), tj, route, self.policy)
            self.jobs.append(job)
            self.push(job.submit, SUBMIT, job.idx)
        p = self.params._replace(bf_interval_s=max(1, self.params.bf_interval_s),
                                 calc_period_s=max(1, self.params.calc_period_s))
        self.prio = Prioritiser(p, max((q.priority for q in self.policy.qos), default=0),
                                max((x.priority_tier for x in self.policy.partitions), default=1),
                                {assoc_of(j) for j in self.jobs})
        weights = {a: self.prio.tree.entitlement(a) for a in {j.account or "" for j in self.jobs}} if p.shares else None
        pending = self.pending = Queue(self.prio, p, drf=p.allocator == "drf")
        limit = self.under_limit if self.user_max else None
        begin = min((j.submit for j in self.jobs), default=0)
        next_calc = next_full = begin
        timed_full = p.sched_delay_s > 0 and p.sched_interval_s > 0
        heap = self.heap
        loops = 0
        while heap:
            self.now = now = heap[0][0]
            backfill_now = full_now = False
            while heap and heap[0][0] == now:
                _, kind, _, idx, run = heapq.heappop(heap)
                if kind == BACKFILL:
                    backfill_now = True
                    continue
                if kind == MAIN:
                    if self.main_due == now:  # else one that an earlier queued pass replaced
                        self.main_due = None
                        self.dirty = True
                    continue
                if kind == FULL:
                    full_now, self.full_due = True, None
                    continue
                job = self.jobs[idx]
                if kind == SUBMIT:
                    pending.add(job, now)
                    self.changed = True
                    if p.submit_delay_s > 0 and p.sched_delay_s > 0:
                        self.queue_main(now + p.submit_delay_s)
                    else:
                        self.dirty = True
                elif job.run == run and job.state in ("RUNNING", "PREEMPTING"):
                    if kind == LIMIT_FREE:
                        if job.state == "RUNNING":  # a preempted run frees its count when it stops
                            self.free_limit(job)
                    elif kind == END:
                        self.on_end(job)
                    elif job.state == "PREEMPTING":
                        self.on_preempt_end(job)
            if now >= next_calc:
                self.prio.recompute(now)
                self.sample(now)
                pending.recompute(now)
                self.dirty = True
                next_calc = now - (now - begin) % p.calc_period_s + p.calc_period_s
            if pending:
                order = pending.view(self.in_use, self.capacity, weights)
                if timed_full:
                    full = full_now
                    if self.full_due is None:
                        self.full_due = now - (now - begin) % p.sched_interval_s + p.sched_interval_s
                        self.push(self.full_due, FULL)
                else:
                    full = p.sched_interval_s > 0 and now >= next_full
                    if full:
                        next_full = now - (now - begin) % p.sched_interval_s + p.sched_interval_s
                self.passes += 1
                if self.dirty or full:
                    self.dirty = False
                    main_pass(order, self.cluster, p, self.victims.values(), self.start, self.preempt, limit,
                              pending.partitions(), None if full else p.default_queue_depth)
            else:  # a pass with nothing pending finds nothing (only a submission's queued pass can tell)
                self.dirty = False
            if backfill_now:
                self.bf_due = None
                if pending and self.changed:
                    self.changed = False
                    self.passes += 1
                    self.in_backfill = True
                    backfill_pass(now, order, self.cluster, list(self.running.values()), p, self.start, limit,
                                  pending.smallest())
                    self.in_backfill = False
            if p.backfill and pending and self.changed and self.bf_due is None:
                self.bf_due = now + ((begin if p.bf_phase_s is None else p.bf_phase_s) - now) % p.bf_interval_s
                if self.bf_due == now and backfill_now:
                    self.bf_due += p.bf_interval_s
                self.push(self.bf_due, BACKFILL)
            loops += 1
            if progress is not None and not loops & 1023:
                progress(now - begin, self.started, len(self.jobs), len(pending))
        self.sample(max(self.now, self.finish))
        accounts = sorted({j.account or "" for j in self.jobs})
        return Result(tuple(self.jobs), tuple(rejected), trace.skipped, self.cluster.gpus, begin, self.finish,
                      self.passes, tuple(self.samples),
                      tuple((x.name, x.per_gpu_hour) for x in self.policy.prices),
                      next((x.currency for x in self.policy.prices if x.currency), ""),
                      tuple((a, self.prio.tree.entitlement(a)) for a in accounts))

    def sample(self, now: int) -> None:
        """The cluster's state for the report: GPUs in use, and how many nodes have each count of free GPUs."""
        free = self.cluster.free
        hist = [0] * (max(self.cluster.total, default=0) + 1)
        for f in free:
            hist[f] += 1
        self.samples.append((now, self.cluster.used_gpus(), tuple(hist)))


def simulate(trace: Trace, policy: Policy, params: Params | None = None, router: Routes | None = None,
             progress: Progress | None = None) -> Result:
    """Replay ``trace`` through ``policy`` and the scheduler model (pure: data in, data out). ``router``:
    the routes of the jobs when they are decided elsewhere (the lab replay routes the uncompressed
    trace); default: the policy's classifier. ``progress``: see :meth:`Engine.run`."""
    return Engine(policy, params or Params()).run(trace, router, progress)
