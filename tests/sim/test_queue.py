# SPDX-License-Identifier: Apache-2.0
"""The pending queue (slurm_gpu/sim/queue.py) gives exactly the order of a full sort by
:func:`~slurm_gpu.sim.priority.order_key` over priorities computed the plain way (every pending job at
every PriorityCalcPeriod, a new one when it enters), and the main pass's depth counts blocked jobs as
Slurm's ``job_depth`` does."""

from __future__ import annotations

import random

import pytest

from slurm_gpu.sim.params import Params, SimJob
from slurm_gpu.sim.priority import Prioritiser, assoc_of
from slurm_gpu.sim.queue import Queue, ages_order

PARAMS = [
    Params(),  # age, QOS and partition weights (the default), no fair share
    Params(max_age_s=900),  # ages reach PriorityMaxAge: those jobs tie and go by submit time
    Params(weight_age=0),  # no age term: submit order within equal priorities
    Params(weight_fairshare=120000, max_age_s=1200),  # classic fair share, read live at a new job's entry
    Params(weight_fairshare=120000, fairshare="fair-tree"),
    Params(weight_age=1, max_age_s=10**9),  # ages too close to order: the plain sort
]


def jobs(rng: random.Random, n: int) -> list[SimJob]:
    out = []
    for i in range(n):
        j = SimJob(i, f"j{i}", rng.randrange(0, 3000), rng.randrange(1, 600), rng.choice((900, 1800, None)))
        j.user, j.account = f"u{rng.randrange(4)}", f"a{rng.randrange(3)}"
        j.tier = rng.choice((1, 5, 5, 10))
        j.partition = {1: "spot", 5: rng.choice(("batch", "mig")), 10: "prio"}[j.tier]
        j.qos_prio = rng.choice((10, 50, 200))
        j.per_node, j.gpus, j.cpus = 1, 1.0, 8
        out.append(j)
    return sorted(out, key=lambda j: (j.submit, j.idx))


@pytest.mark.parametrize("params", PARAMS)
@pytest.mark.parametrize("seed", range(4))
def test_the_order_is_a_full_sort_s(params: Params, seed: int) -> None:
    rng = random.Random(seed)
    todo = jobs(rng, 300)
    assocs = {assoc_of(j) for j in todo}
    prio = Prioritiser(params, 200, 10, assocs)
    plain = Prioritiser(params, 200, 10, assocs)  # the same usage, for the plain computation
    queue = Queue(prio, params)
    pending: list[SimJob] = []
    assert queue.exact == (not ages_order(params))
    now, calc = 0, 0
    while todo or pending:
        now += rng.randrange(1, 90)
        while todo and todo[0].submit <= now:
            j = todo.pop(0)
            j.eligible = j.submit = now
            queue.add(j, now)
            plain_prio = plain.compute(j, now)
            assert j.prio == plain_prio
            pending.append(j)
        if now >= calc:  # PriorityCalcPeriod: the plain way recomputes every pending job
            for p in (prio, plain):
                p.recompute(now)
            queue.recompute(now)
            expected = {j.idx: plain.compute(j, now) for j in pending}
            calc = now + 300
        else:
            expected = {**expected, **{j.idx: j.prio for j in pending if j.idx not in expected}}
        want = sorted(pending, key=lambda j: (-j.tier, -expected[j.idx], j.submit, j.idx))
        assert [j.idx for j in queue.view()] == [j.idx for j in want]
        # some start (and some of those are requeued later), usage is charged (fair share changes)
        for j in rng.sample(pending, min(len(pending), rng.randrange(0, 4))):
            j.state = "RUNNING"
            queue.remove(j)
            pending.remove(j)
            ran = rng.randrange(60, 3600)
            for p in (prio, plain):
                p.charge(j, ran, now)
            if rng.random() < 0.2:
                j.state, j.eligible = "PENDING", now
                queue.add(j, now)
                assert j.prio == plain.compute(j, now)
                expected[j.idx] = j.prio
                pending.append(j)
        assert len(queue) == len(pending)
        assert queue.partitions() == {j.partition for j in pending}


def test_a_blocked_partition_s_jobs_count_against_the_depth() -> None:
    # order: b0 b1 b2 (batch, older) then s0 s1 (spot, lower tier); batch blocked from the start: with
    # depth 3 Slurm's loop takes b0 b1 b2 s0 (job_depth 0..3) and stops before s1
    params = Params()
    queue = Queue(Prioritiser(params, 200, 10, {("a", "u")}), params)
    for i, (part, tier) in enumerate((("batch", 5),) * 3 + (("spot", 1),) * 2):
        j = SimJob(i, f"j{i}", i, 10, 900)
        j.user, j.account, j.partition, j.tier, j.per_node = "u", "a", part, tier, 1
        queue.add(j, i)
    queue.recompute(10)
    order = queue.view()
    assert [j.idx for j in order] == [0, 1, 2, 3, 4]
    assert [j.idx for j in order.scan({"batch"}, 3)] == [3]
    assert [j.idx for j in order.scan({"batch"}, 4)] == [3, 4]
    assert [j.idx for j in order.scan({"batch"}, None)] == [3, 4]
    assert [j.idx for j in order.scan(set(), 1)] == [0, 1]
