# SPDX-License-Identifier: Apache-2.0
"""Invariants of any simulated schedule, on seeded random traces over the tiny policy: no node holds
more GPUs than it has at any time, no job starts before its submit, a run lasts its work cut at its
limit (or ends by preemption), and a job without preemption ends start + min(duration, limit) later."""

from __future__ import annotations

import random

import pytest

from slurm_gpu.sim.cluster import Cluster
from slurm_gpu.sim.engine import Engine
from slurm_gpu.sim.params import Params
from slurm_gpu.sim.traces import read_trace
from tests.sim.helpers import TINY


def random_trace(seed: int, jobs: int = 60) -> str:
    rng = random.Random(seed)
    rows = ["job_id,user,account,gpu_num,node_num,submit_time,duration,time_limit,partition,gpu_fraction"]
    t = 0
    for i in range(jobs):
        t += rng.randrange(0, 120)
        g = rng.choice((1, 1, 2, 3, 4, 8))
        part = rng.choice(("", "", "", "spot", "prio"))
        frac = rng.choice(("", "", "", "", "0.1", "0.4")) if not part else ""
        dur = rng.randrange(1, 900)
        limit = rng.choice((str(-(-dur // 60)), str(-(-dur // 60) + rng.randrange(0, 30)), ""))
        rows.append(f"j{i},u{i % 3},a{i % 2},{g},{2 if g == 8 else 1},{t},{dur},{limit},{part},{frac}")
    return "\n".join(rows) + "\n"


class Checked(Engine):
    """The engine, checking the cluster's books after every start and stop."""

    def start(self, job, chosen):  # type: ignore[no-untyped-def]
        super().start(job, chosen)
        check(self.cluster)

    def _stop(self, job):  # type: ignore[no-untyped-def]
        ran = super()._stop(job)
        check(self.cluster)
        return ran


def check(c: Cluster) -> None:
    for i, total in enumerate(c.total):
        assert 0 <= c.free[i] <= total
        assert all(0 <= f < 7 for f in c.slots[i].values())
        assert c.free[i] + len(c.slots[i]) <= total


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("backfill", [True, False])
def test_schedule_invariants(seed: int, backfill: bool) -> None:
    trace = read_trace(random_trace(seed).splitlines(), "r.csv")
    params = Params(backfill=backfill, bf_interval_s=7, ckpt_interval_s=60 if seed % 2 else 0,
                    weight_fairshare=120000 if seed % 3 == 0 else 0)
    engine = Checked(TINY, params)
    result = engine.run(trace)
    durations = {tj.job_id: tj.duration for tj in trace.jobs}
    assert len(result.jobs) + len(result.rejected) == len(trace.jobs)
    for j in result.jobs:
        assert j.first_start is not None and j.start is not None and j.end is not None, j.job_id
        assert j.submit <= j.first_start <= j.start <= j.end
        if not j.preempted:
            limit = j.limit if j.limit is not None else 1 << 40
            assert j.end - j.start == min(durations[j.job_id], limit)
            assert j.state == ("COMPLETED" if durations[j.job_id] <= limit else "TIMEOUT")
    # every GPU and MIG slice is given back at the end
    assert engine.cluster.free == engine.cluster.total and engine.cluster.slots == [{}, {}]
    assert not engine.running and not engine.pending
