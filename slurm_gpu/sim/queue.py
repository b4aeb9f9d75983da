# SPDX-License-Identifier: Apache-2.0
"""The pending queue: jobs in the scheduler's order, without sorting the whole queue at every pass.

The order is Slurm's (:func:`slurm_gpu.sim.priority.order_key`): partition PriorityTier, then priority,
then submit time and trace order; priorities are recomputed every PriorityCalcPeriod, and a job's first
one (or the one after a requeue) when it enters the queue. Sorting every pending job at every event and
recomputing every priority every period costs O(queue) each time, so a trace that overloads its cluster
(a queue that grows with the trace) took quadratic time. This queue gives the same order, exactly, and a
pass pays only for the jobs it looks at:

- Jobs are kept in buckets of equal (tier, QOS priority, fair-share entity). Within a bucket every term
  of the priority but age is the same, so among jobs whose priority dates from the same recompute T the
  order is by ``eligible`` (older first; then submit, index), except that jobs past PriorityMaxAge all
  have the age factor 1, tie, and go by (submit, index). A bucket is three sorted lists: ``aged`` (past
  the cap), ``ageing`` (by eligible) and ``new`` (entered since T, by the priority they got then).
- A pass merges the lists' heads by their exact keys (a head's priority is computed as of T, with the
  fair-share factor as of T), in O(jobs looked at x log lists).
- When PriorityWeightAge per second is so small against the weights that two ages may round to one
  priority, ages do not order a bucket exactly; then every priority is computed at T and the queue is
  sorted (the plain way, O(queue)).

With ``--allocator drf`` the queue keeps each account's jobs per tier, oldest first, and a pass reads
the progressive filling lazily (:func:`slurm_gpu.sim.drf.drf_iter`).

Jobs that start are removed after the pass (:meth:`Queue.remove` marks them; the lists change only
between passes), so a pass may start jobs while it reads the order. The queue also keeps what the
passes need of the whole queue: the partitions with pending jobs, and the smallest GPUs per node and
time limit pending (backfill stops when nothing that small can start).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from slurm_gpu.sim.drf import Demand, entity, fill_tier, use_snapshot
from slurm_gpu.sim.params import NO_LIMIT_S, Params, SimJob
from slurm_gpu.sim.priority import Prioritiser, order_key

Key = Callable[[SimJob], tuple[Any, ...]]
OrderKey = Callable[[SimJob], tuple[int, float, int, int]]


def _count(counts: dict[Any, int], key: object, by: int) -> None:
    n = counts.get(key, 0) + by
    if n:
        counts[key] = n
    else:
        del counts[key]


def _by_submit(j: SimJob) -> tuple[int, int]:
    return (j.submit, j.idx)


def _by_eligible(j: SimJob) -> tuple[int, int, int]:
    return (j.eligible, j.submit, j.idx)


def _by_prio(j: SimJob) -> tuple[float, int, int]:
    return (-j.prio, j.submit, j.idx)


def shape(job: SimJob) -> tuple[int, int]:
    """(GPUs per node, time limit) as backfill plans them (a MIG slice takes one GPU in the plan)."""
    return (1 if job.slices else job.per_node, job.limit if job.limit is not None else NO_LIMIT_S)


def ages_order(params: Params) -> bool:
    """Whether ages a second apart always give different priorities (rounding included), so that age
    orders the jobs of a bucket (``Params`` weights are per unit factor; the priority is at most their
    sum). False also for a negative age weight; a zero weight (or PriorityMaxAge 0) needs no age order."""
    w, m = params.weight_age, params.max_age_s
    if w == 0 or m <= 0:
        return True
    total = abs(w) + abs(params.weight_qos) + abs(params.weight_partition) + abs(params.weight_fairshare)
    return w > 0 and (w / m) * 2.0 ** 49 > total


class _Bucket:
    __slots__ = ("aged", "ageing", "new", "fs")

    def __init__(self) -> None:
        self.aged: list[SimJob] = []
        self.ageing: list[SimJob] = []
        self.new: list[SimJob] = []
        self.fs = 0.0  # the fair-share factor as of the last recompute


class Queue:
    """The pending jobs of one simulation (the engine's own, mutable)."""

    def __init__(self, prio: Prioritiser, params: Params, drf: bool = False) -> None:
        self.prio, self.params, self.drf = prio, params, drf
        self.flat = params.weight_age == 0 or params.max_age_s <= 0  # the age term is 0 for every job
        self.exact = not drf and not ages_order(params)
        self.when: int | None = None  # the last recompute (T)
        # (tier, partition, QOS priority, fair-share entity) -> its bucket
        self.buckets: dict[tuple[Any, ...], _Bucket] = {}
        self.plain: list[SimJob] = []  # exact mode: every pending job
        self.tiers: dict[int, dict[str, list[SimJob]]] = {}  # DRF: tier -> account -> jobs, oldest first
        # job index -> (its list, the list's key, the job's key in it when put there, its bucket's key:
        # (tier, account) with DRF)
        self.where: dict[int, tuple[list[SimJob], Key, tuple[Any, ...], tuple[Any, ...]]] = {}
        self.dead: list[SimJob] = []
        self.parts: dict[str, int] = {}
        self.tier_parts: dict[int, dict[str, int]] = {}  # DRF: jobs per partition in each tier
        self.units: dict[int, int] = {}
        self.lengths: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.where) - len(self.dead)

    # ---- changes (between passes) ----

    def add(self, job: SimJob, now: int) -> None:
        """A job enters the queue (submitted, or requeued) at ``now``; its priority is computed now."""
        self._sweep()
        job.prio, job.prio_at = self.prio.compute(job, now), None
        if self.drf:
            jobs = self.tiers.setdefault(job.tier, {}).setdefault(entity(job), [])
            self._put(job, jobs, _by_submit, (job.tier, entity(job)))
        elif self.exact:
            self.plain.append(job)
            self.where[job.idx] = (self.plain, order_key, (), ())
        else:
            key = (job.tier, job.partition, job.qos_prio, self.prio.entity(job))
            b = self.buckets.get(key)
            if b is None:
                b = self.buckets[key] = _Bucket()
                b.fs = self.prio.factor(key[3])
            self._put(job, b.new, _by_prio, key)
        self._counts(job, 1)

    def remove(self, job: SimJob) -> None:
        """A job left the queue (it started); taken out of the lists before the next change or pass."""
        self.dead.append(job)
        self._counts(job, -1)

    def _counts(self, job: SimJob, by: int) -> None:
        units, length = shape(job)
        _count(self.parts, job.partition, by)
        _count(self.units, units, by)
        _count(self.lengths, length, by)
        if self.drf:
            in_tier = self.tier_parts.setdefault(job.tier, {})
            _count(in_tier, job.partition, by)
            if not in_tier:
                del self.tier_parts[job.tier]

    def recompute(self, now: int) -> None:
        """PriorityCalcPeriod: every pending job's priority as of ``now`` (after the Prioritiser's own
        recompute: decay, Fair Tree's ranks)."""
        self._sweep()
        self.when = now
        if self.drf:
            return
        if self.exact:
            for job in self.plain:
                job.prio = self.prio.compute(job, now)
            return
        max_age = self.params.max_age_s
        for key, b in self.buckets.items():
            b.fs = self.prio.factor(key[3])
            for job in b.new:
                self._put(job, b.aged if self.flat else b.ageing, _by_submit if self.flat else _by_eligible, key)
            b.new.clear()
            if not self.flat:
                n = 0
                while n < len(b.ageing) and now - b.ageing[n].eligible >= max_age:
                    self._put(b.ageing[n], b.aged, _by_submit, key)
                    n += 1
                del b.ageing[:n]

    def _put(self, job: SimJob, jobs: list[SimJob], key: Key, bucket: tuple[Any, ...]) -> None:
        insort(jobs, job, key=key)
        self.where[job.idx] = (jobs, key, key(job), bucket)

    def _sweep(self) -> None:
        if not self.dead:
            return
        if self.exact:
            gone = {job.idx for job in self.dead}
            self.plain[:] = [j for j in self.plain if j.idx not in gone]
            for i in gone:
                del self.where[i]
            self.dead.clear()
            return
        for job in self.dead:
            jobs, key, was, bucket = self.where.pop(job.idx)
            i = bisect_left(jobs, was, key=key)
            while jobs[i] is not job:
                i += 1
            del jobs[i]
            if self.drf and not jobs:
                accounts = self.tiers[bucket[0]]
                del accounts[bucket[1]]
                if not accounts:
                    del self.tiers[bucket[0]]
            elif not self.drf:
                b = self.buckets[bucket]
                if not (b.aged or b.ageing or b.new):
                    del self.buckets[bucket]
        self.dead.clear()

    # ---- what a pass reads ----

    def partitions(self) -> set[str]:
        """The partitions with pending jobs."""
        return set(self.parts)

    def smallest(self) -> tuple[int, int]:
        """The fewest GPUs per node and the shortest time limit among the pending jobs (each on its own)."""
        return (min(self.units, default=0), min(self.lengths, default=0))

    def view(self, in_use: Mapping[str, Sequence[float]] | None = None, capacity: Demand = (0.0, 0.0, 0.0),
             weights: Mapping[str, float] | None = None) -> View:
        """The pending jobs in order, for the passes of one event (DRF: as of ``in_use`` now)."""
        self._sweep()
        if self.drf:
            return Drf(self, use_snapshot(self.tiers, in_use or {}), capacity, weights or {})
        if self.exact:  # the plain way: a new job's priority is its own, the others' as of T
            self.plain.sort(key=order_key)
            return View(iter(self.plain))
        return Merged(self)

    def _sources(self) -> list[tuple[list[SimJob], OrderKey, str]]:
        """Every non-empty list with its exact order key and its partition."""
        when = self.when
        at = self.prio.at

        def fresh(j: SimJob) -> tuple[int, float, int, int]:
            return (-j.tier, -j.prio, j.submit, j.idx)

        def regular(fs: float) -> OrderKey:
            def key(j: SimJob) -> tuple[int, float, int, int]:
                if j.prio_at != when:
                    j.prio, j.prio_at = at(j, when or 0, fs), when
                return (-j.tier, -j.prio, j.submit, j.idx)
            return key

        out: list[tuple[list[SimJob], OrderKey, str]] = []
        for (_tier, part, *_), b in self.buckets.items():
            if b.aged or b.ageing:
                key: OrderKey = regular(b.fs)
                out.extend((jobs, key, part) for jobs in (b.aged, b.ageing) if jobs)
            if b.new:
                out.append((b.new, fresh, part))
        return out

    def merge(self, blocked: set[str] | None = None, depth: int | None = None) -> Iterator[SimJob]:
        """The lists merged by their exact keys. With ``blocked`` (the main pass's set of blocked partitions,
        filled while it reads): a blocked partition's jobs are left out, yet counted against ``depth``
        (Slurm's job_depth counts them): the scan ends before the first job that more than ``depth`` jobs
        (given or left out) precede."""
        srcs = self._sources()
        if blocked is None and len(srcs) == 1:  # one list: its own order
            yield from srcs[0][0]
            return
        heads = [(key(jobs[0]), n, 0) for n, (jobs, key, _part) in enumerate(srcs)]
        heapq.heapify(heads)
        dropped: list[list[int]] = []  # [source, its position when dropped, jobs of it before the scan's key]
        given = 0
        while heads:
            k, n, pos = heads[0]
            jobs, key, part = srcs[n]
            if blocked is not None and part in blocked:
                heapq.heappop(heads)
                if depth is not None:
                    dropped.append([n, pos, pos])
                continue
            if depth is not None:
                left_out = 0
                for d in dropped:
                    d_jobs, d_key, _ = srcs[d[0]]
                    d[2] = bisect_left(d_jobs, k, lo=d[2], key=d_key)
                    left_out += d[2] - d[1]
                if given + left_out > depth:
                    return
                given += 1
            job = jobs[pos]
            pos += 1
            if pos < len(jobs):
                heapq.heapreplace(heads, (key(jobs[pos]), n, pos))
            else:
                heapq.heappop(heads)
            yield job


def scan(jobs: Iterable[SimJob], blocked: set[str], depth: int | None) -> Iterator[SimJob]:
    """The main pass's reading of an order (a list, or a :class:`View`): pending jobs not in a
    ``blocked`` partition (filled while it reads), until more than ``depth`` pending jobs were taken
    (blocked ones count, as in Slurm's loop); ``depth`` None: all."""
    taken = 0
    for job in jobs:
        if job.state != "PENDING":
            continue
        if depth is not None:
            if taken > depth:
                return
            taken += 1
        if job.partition not in blocked:
            yield job


class View:
    """The order for one event's passes: read lazily, once; a second pass reads it again from the top
    (without the jobs started meanwhile), as the engine's passes of one event share one order."""

    __slots__ = ("_source", "_seen")

    def __init__(self, source: Iterator[SimJob]) -> None:
        self._source = source
        self._seen: list[SimJob] = []

    def __iter__(self) -> Iterator[SimJob]:
        seen = self._seen
        for job in seen:
            if job.state == "PENDING":
                yield job
        for job in self._source:
            seen.append(job)
            if job.state == "PENDING":
                yield job

    def scan(self, blocked: set[str], depth: int | None) -> Iterator[SimJob]:
        return scan(self, blocked, depth)


class Merged(View):
    """The priority order of a :class:`Queue`'s buckets: each reading merges them again (the lists do not
    change during an event's passes), and the main pass's skips whole blocked partitions."""

    __slots__ = ("_queue",)

    def __init__(self, queue: Queue) -> None:
        super().__init__(iter(()))
        self._queue = queue

    def __iter__(self) -> Iterator[SimJob]:
        return (j for j in self._queue.merge() if j.state == "PENDING")

    def scan(self, blocked: set[str], depth: int | None) -> Iterator[SimJob]:
        return self._queue.merge(blocked, depth)


class Drf(View):
    """The DRF order of a :class:`Queue` as of one event (the accounts' use then): each reading fills the
    tiers again; the main pass's skips the rest of a tier once all of its partitions are blocked (each
    tier's filling is its own, so the tiers below do not depend on it)."""

    __slots__ = ("_queue", "_use", "_capacity", "_weights", "_counts")

    def __init__(self, queue: Queue, use: Mapping[str, Sequence[float]], capacity: Demand,
                 weights: Mapping[str, float]) -> None:
        super().__init__(iter(()))
        self._queue, self._use, self._capacity, self._weights = queue, use, capacity, weights
        self._counts = {tier: dict(parts) for tier, parts in queue.tier_parts.items()}

    def __iter__(self) -> Iterator[SimJob]:
        return (j for j in self._read(None, None) if j.state == "PENDING")

    def scan(self, blocked: set[str], depth: int | None) -> Iterator[SimJob]:
        return self._read(blocked, depth)

    def _read(self, blocked: set[str] | None, depth: int | None) -> Iterator[SimJob]:
        tiers = self._queue.tiers
        taken = 0
        for tier in sorted(tiers, reverse=True):
            left = dict(self._counts.get(tier, {}))
            for job in fill_tier(tiers[tier], self._use, self._capacity, self._weights):
                if blocked is not None:
                    if all(p in blocked for p in left):
                        taken += sum(left.values())  # the rest of the tier: every one blocked
                        break
                    if depth is not None:
                        if taken > depth:
                            return
                        taken += 1
                    n = left[job.partition] - 1
                    if n:
                        left[job.partition] = n
                    else:
                        del left[job.partition]
                    if job.partition in blocked:
                        continue
                yield job
