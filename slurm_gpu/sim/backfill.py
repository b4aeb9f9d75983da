# SPDX-License-Identifier: Apache-2.0
"""Backfill (sched/backfill): a plan of GPU use over time, built on time limits, and one pass.

The plan knows, per node, the GPUs in use now, when each running job releases its GPUs (start + time
limit, not the true duration: Slurm does not know it) and the reservations made in this pass. The
pass takes pending jobs in priority order (at most ``bf_max_job_test``); for each it finds the
earliest time, now or at a planned release, when enough nodes have the GPUs free for the job's whole
time limit. At ``now`` the job starts; later (within ``bf_window``) the nodes are reserved for it, so
a lower job starts only where it does not delay any reservation. With ``bf_whole_nodes`` (Slurm's
way, set for the lab) a reservation takes its nodes whole, and with ``bf_resolution_s`` it runs from
its start to its planned end both rounded down to that grid on the wall clock (Slurm's node_space
map), so a lower job may not use a reserved node's other GPUs while its limit overlaps. A MIG job
counts as one GPU in the plan (a split GPU is busy until its last slice is planned to end); it starts
now on a split GPU whose planned end covers its limit without taking a GPU.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterable
from itertools import accumulate, islice

from slurm_gpu.sim.cluster import Cluster
from slurm_gpu.sim.params import NO_LIMIT_S, Params, SimJob


class Plan:
    __slots__ = ("now", "total", "used", "rel", "res", "slot_end", "_ready", "_sorted", "_next", "_steps", "whole",
                 "grid", "clock0")

    def __init__(self, now: int, cluster: Cluster, running: Iterable[SimJob], params: Params | None = None) -> None:
        self.now = now
        p = params or Params()
        self.whole, self.grid, self.clock0 = p.bf_whole_nodes, max(0, p.bf_resolution_s), p.clock0_s
        self.total = cluster.total
        self.used = [t - f for t, f in zip(cluster.total, cluster.free, strict=True)]
        self.rel: list[list[tuple[int, int]]] = [[] for _ in self.total]
        self.res: list[list[tuple[int, int, int]]] = [[] for _ in self.total]
        self.slot_end: dict[tuple[int, int], int] = {}
        for job in running:
            end = job.planned_end
            for i, whole, slot, _slices in job.alloc:
                if slot >= 0:
                    key = (i, slot)
                    self.slot_end[key] = max(self.slot_end.get(key, 0), end)
                elif whole:
                    self.rel[i].append((end, whole))
        for (i, _slot), end in self.slot_end.items():
            self.rel[i].append((end, 1))
        for r in self.rel:
            r.sort()
        self._ready: list[dict[int, int]] = [{} for _ in self.total]  # node -> units -> ready time
        # (group, units) -> [(ready time, node)] sorted; reservations do not move ready times, starts do
        self._sorted: dict[tuple[tuple[int, ...], int], list[tuple[int, int]]] = {}
        # node -> (units, length) -> (after, node_earliest's answer): the answer stands for any later
        # `after` up to it, until the node's plan changes
        self._next: list[dict[tuple[int, int], tuple[int, int | None]]] = [{} for _ in self.total]
        # node -> (times where its use changes, sorted; its use from each of them on), for nodes with
        # reservations; made when first needed, dropped when the node's plan changes
        self._steps: dict[int, tuple[list[int], list[int]]] = {}

    def ready(self, i: int, units: int) -> int:
        """The earliest time node ``i`` has ``units`` GPUs free, counting releases only (a lower bound
        of when it fits: reservations only take GPUs away). Cached until the node's releases change."""
        cache = self._ready[i]
        t = cache.get(units)
        if t is None:
            free = self.total[i] - self.used[i]
            t = self.now
            if free < units:
                t = 1 << 62
                for end, g in self.rel[i]:
                    free += g
                    if free >= units:
                        t = end
                        break
            cache[units] = t
        return t

    def steps(self, i: int) -> tuple[list[int], list[int]]:
        """Node ``i``'s use as a step function: the times where it changes (planned releases, reservations'
        starts and ends), sorted, and the GPUs in use from each of them to the next (before the first:
        ``used``)."""
        got = self._steps.get(i)
        if got is None:
            delta: dict[int, int] = {}
            for end, g in self.rel[i]:
                delta[end] = delta.get(end, 0) - g
            for s, e, g in self.res[i]:
                delta[s] = delta.get(s, 0) + g
                delta[e] = delta.get(e, 0) - g
            times = sorted(delta)
            got = self._steps[i] = (times, list(accumulate((delta[t] for t in times), initial=self.used[i]))[1:])
        return got

    def usage(self, i: int, t: int) -> int:
        if not self.res[i]:
            u = self.used[i]
            for end, g in self.rel[i]:
                if end <= t:
                    u -= g
            return u
        times, level = self.steps(i)
        k = bisect_right(times, t)
        return level[k - 1] if k else self.used[i]

    def fits(self, i: int, start: int, length: int, units: int) -> bool:
        """Whether node ``i`` has ``units`` GPUs free from ``start`` for ``length`` seconds (its use at
        ``start`` and at every change before the end: only reservations' starts raise it)."""
        if not self.res[i]:  # releases only: usage falls with time, so ready() decides
            return self.ready(i, units) <= start
        cap = self.total[i] - units
        if cap < 0:
            return False
        times, level = self.steps(i)
        k = bisect_right(times, start)
        if (level[k - 1] if k else self.used[i]) > cap:
            return False
        m = bisect_left(times, start + length, lo=k)
        return m <= k or max(level[k:m]) <= cap

    def node_earliest(self, i: int, units: int, length: int, horizon: int, after: int = 0) -> int | None:
        """The earliest time (<= horizon) node ``i`` fits ``units`` GPUs for ``length`` seconds: tried
        at its ready time, its planned releases and its reservations' starts and ends (between two of
        these its use is constant, so no earlier start fits)."""
        r = max(self.ready(i, units), after)
        if r > horizon:
            return None
        res = self.res[i]
        if not res:
            return r
        known = self._next[i].get((units, length))
        if known is not None and known[0] <= after and (known[1] is None or after <= known[1]):
            return known[1]
        found = self._node_earliest(i, r, units, length, horizon)
        self._next[i][(units, length)] = (after, found)
        return found

    def _node_earliest(self, i: int, r: int, units: int, length: int, horizon: int) -> int | None:
        """The first of ``r`` and the node's later changes (in time order, up to ``horizon``) where it
        fits: a change inside the window that goes over the cap rules out every start up to it, so the
        next one tried is the change after it (each change is looked at about once)."""
        cap = self.total[i] - units
        if cap < 0:
            return None
        times, level = self.steps(i)
        n = len(times)
        c, k = r, bisect_right(times, r)  # k: the first change after c
        while c <= horizon:
            if (level[k - 1] if k else self.used[i]) <= cap:
                end = c + length
                j = k
                while j < n and times[j] < end and level[j] <= cap:
                    j += 1
                if j >= n or times[j] >= end:
                    return c
                k = j + 1  # times[j] is over the cap and inside [c, end)
            if k >= n:
                return None
            c, k = times[k], k + 1
        return None

    def earliest(self, group: tuple[int, ...], nodes: int, units: int, length: int,
                 horizon: int, after: int = 0) -> tuple[int, list[int]] | None:
        """The earliest planned time in [after, horizon] when ``nodes`` nodes of the group have ``units``
        GPUs free for ``length`` seconds, with those nodes (best fit: the busiest first)."""
        key = (group, units)
        ready = self._sorted.get(key)
        if ready is None:
            ready = self._sorted[key] = sorted((self.ready(i, units), i) for i in group)
        if len(ready) < nodes or max(ready[nodes - 1][0], after) > horizon:
            return None
        if nodes == 1:  # the node that fits first; a node ready later cannot fit earlier
            best: tuple[int, int, int] | None = None
            for r, i in ready:
                if r > horizon or (best is not None and r > best[0]):
                    break
                when = self.node_earliest(i, units, length, horizon, after)
                if when is not None:
                    cand = (when, self.total[i] - self.usage(i, when), i)
                    if best is None or cand < best:
                        best = cand
            return None if best is None else (best[0], [best[2]])
        # A gang: the first time when enough nodes fit at once. Nodes without reservations fit from their
        # ready time on; a node with reservations fits at the times node_earliest finds (recomputed once
        # its last one has passed). Which nodes fit changes only at those times and the ready times.
        free: list[int] = []  # ready nodes without reservations
        reserved: list[int] = []  # ready nodes with reservations
        nxt: dict[int, int | None] = {}
        k = 0
        t = max(ready[nodes - 1][0], after)
        while t <= horizon:
            while k < len(ready) and ready[k][0] <= t:
                i = ready[k][1]
                (reserved if self.res[i] else free).append(i)
                k += 1
            ok = list(free)
            upcoming = ready[k][0] if k < len(ready) else horizon + 1
            for i in reserved:
                at = nxt.get(i, -1)
                if at is not None and at < t:
                    at = nxt[i] = self.node_earliest(i, units, length, horizon, t)
                if at == t:
                    ok.append(i)
                elif at is not None and at < upcoming:
                    upcoming = at
            if len(ok) >= nodes:
                ok.sort(key=lambda i: (self.total[i] - self.usage(i, t), i))
                return t, ok[:nodes]
            t = upcoming
        return None

    def hold(self, chosen: Iterable[int], start: int, length: int, units: int) -> None:
        """A job started now (start == now) or reserved later on ``chosen`` (whole nodes and on the
        bf_resolution grid when the parameters say so: Slurm's node_space)."""
        end = start + length
        if start > self.now and self.grid:
            start -= (start + self.clock0) % self.grid
            end -= (end + self.clock0) % self.grid
        for i in chosen:
            self._next[i].clear()
            if start <= self.now:
                self._step(i, None, end, units)
                self.used[i] += units
                insort(self.rel[i], (end, units))
                self._ready[i].clear()
                self._sorted.clear()
            elif end > start:
                g = self.total[i] if self.whole else units
                self._step(i, start, end, g)
                self.res[i].append((start, end, g))

    def _step(self, i: int, start: int | None, end: int, g: int) -> None:
        """Add ``g`` GPUs in use from ``start`` (None: from now on, a start) to ``end`` to node ``i``'s
        step function, when it has been made."""
        got = self._steps.get(i)
        if got is None:
            return
        times, level = got
        for t in (start, end):
            if t is None:
                continue
            k = bisect_left(times, t)
            if k == len(times) or times[k] != t:
                times.insert(k, t)
                level.insert(k, level[k - 1] if k else self.used[i])
        a = 0 if start is None else bisect_left(times, start)
        for k in range(a, bisect_left(times, end)):
            level[k] += g


def backfill_pass(now: int, pending: Iterable[SimJob], cluster: Cluster, running: Iterable[SimJob],
                  params: Params, start: Callable[[SimJob, list[int]], None],
                  under_limit: Callable[[SimJob], bool] | None = None,
                  smallest: tuple[int, int] = (0, 0)) -> int:
    """One backfill pass over the first ``bf_max_job_test`` of ``pending`` (in priority order); returns the
    number of jobs started. A job over a per-user limit (``under_limit`` false) is skipped and reserves
    nothing. ``smallest``: at most the fewest GPUs per node and the shortest time limit of any pending
    job; once no node can start a job that small now, the pass stops (only starts outlive a pass; the
    reservations of the jobs after that could not change any)."""
    plan = Plan(now, cluster, running, params)
    horizon = now + params.bf_window_s
    started = 0
    # Whether a job could still start now: some node fits the smallest shape now (a node that does not
    # never will again in this pass: the plan only fills), or a split MIG GPU has free slices.
    least_units, least_length = smallest
    mig_room = any(f > 0 for slots in cluster.slots for f in slots.values())
    open_nodes = [i for i in range(len(plan.total)) if plan.usage(i, now) <= plan.total[i] - least_units]
    stale = True  # the last open node may no longer fit (checked before the next job)
    # The plan only fills up during a pass: a job of the same shape as one tested before cannot fit
    # earlier than that one did (nor at all, when that one did not fit within the window).
    lower: dict[tuple[str, str | None, int, int, int, int], int] = {}
    for job in islice(pending, params.bf_max_job_test):
        if stale and not mig_room:
            while open_nodes and not plan.fits(open_nodes[-1], now, least_length, least_units):
                open_nodes.pop()
            if not open_nodes:
                break
            stale = False
        if job.state != "PENDING":
            continue
        if under_limit is not None and not under_limit(job):
            continue
        group = cluster.group(job.partition, job.gpu_type)
        length = job.limit if job.limit is not None else NO_LIMIT_S
        if job.slices:
            chosen = cluster.pick(group, 1, 0, job.slices)
            if chosen is not None and any(
                    f >= job.slices and plan.slot_end.get((chosen[0], s), 0) >= now + length
                    for s, f in cluster.slots[chosen[0]].items()):
                start(job, chosen)
                started += 1
                continue
        units = 1 if job.slices else job.per_node
        shape = (job.partition, job.gpu_type, job.nodes, units, length, job.slices)
        after = lower.get(shape, now)
        found = plan.earliest(group, job.nodes, units, length, horizon, after) if after <= horizon else None
        if found is None:
            lower[shape] = horizon + 1
            continue
        t, nodes = found
        lower[shape] = t
        if t <= now:
            chosen = cluster.pick(group, job.nodes, job.per_node, job.slices, frozenset(nodes))
            if chosen is None:  # the plan and the cluster disagree only for MIG packing
                continue
            start(job, chosen)
            started += 1
            plan.hold(chosen, now, length, units)
        else:
            plan.hold(nodes, t, length, units)
            chosen = nodes
        if open_nodes and open_nodes[-1] in chosen:
            stale = True
    return started
