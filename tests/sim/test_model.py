# SPDX-License-Identifier: Apache-2.0
"""Routing through the real classifier, the cluster's allocation, priorities and the summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_gpu.policy import load_policy
from slurm_gpu.sim.cluster import Cluster
from slurm_gpu.sim.params import Params
from slurm_gpu.sim.priority import FairShare, priority
from slurm_gpu.sim.report import differences, jobs_csv, percentile, summary
from slurm_gpu.sim.routing import Route, Router
from slurm_gpu.sim.traces import TraceJob
from tests.sim.helpers import TINY, run

UNIVERSITY = load_policy(str(Path(__file__).resolve().parent / "data" / "university.yaml"))


@pytest.mark.parametrize("job,route", [
    # 20 min of 1 GPU: the derived limit is 30m, within debug's max_time: class debug, interactive/debug
    (TraceJob("1", 0, 1200, gpus=1), Route("debug", "interactive", "debug", "a100", 1, 1, 0, 1800)),
    # 3 h of 8 GPUs: limit 4h, production in batch, untyped -> the partition's default type h100
    (TraceJob("2", 0, 10800, gpus=8), Route("production", "batch", "normal", "h100", 1, 8, 0, 14400)),
    # 16 GPUs of an account with a grant: class priority, QOS high, two nodes
    (TraceJob("3", 0, 60, gpus=16, account="nsf-ai-grant"), Route("priority", "batch", "high", "h100", 2, 8, 0, 900)),
    # a recorded limit is kept; a fraction becomes a MIG slice in partition mig
    (TraceJob("4", 0, 60, gpus=1, gpu_fraction=0.25, time_limit_s=3600),
     Route("mig-small", "mig", "normal", "a100", 1, 0, 2, 3600)),
    # 40 h: the derived limit (64h) is over batch's 2 days; capped at 2-00:00:00 as a user would ask
    (TraceJob("5", 0, 40 * 3600, gpus=8), Route("production", "batch", "normal", "h100", 1, 8, 0, 172800)),
])
def test_routing_is_the_classifier_s(job: TraceJob, route: Route) -> None:
    assert Router(UNIVERSITY).route(job) == route


@pytest.mark.parametrize("job,reason", [
    (TraceJob("1", 0, 7200, gpus=0), "this cluster runs GPU jobs only"),
    (TraceJob("2", 0, 60, gpus=64), "64 GPUs exceeds QOS normal limit of 8 GPUs per job"),
    (TraceJob("3", 0, 60, gpus=1, gpu_type="v100"), "unknown GPU type 'v100'"),
    (TraceJob("4", 0, 60, gpus=1, partition="nope"), "unknown partition 'nope'"),
])
def test_rejections_are_the_classifier_s(job: TraceJob, reason: str) -> None:
    got = Router(UNIVERSITY).route(job)
    assert isinstance(got, str) and got.startswith(reason)


def test_cluster_from_node_types_and_partitions() -> None:
    c = Cluster(UNIVERSITY)
    assert c.names == ["h100n1", "h100n2", "a100n1"] and c.total == [8, 8, 4] and c.gpus == 20
    assert c.group("batch", "h100") == (0, 1) and c.group("mig", "a100") == (2,)
    assert c.group("batch", None) == (0, 1, 2)


def test_best_fit_and_gang_allocation() -> None:
    c = Cluster(TINY)
    first = c.allocate(c.pick(c.group("batch", "g"), 1, 3) or [], 3)
    assert first == ((0, 3, -1, 0),)
    assert c.pick(c.group("batch", "g"), 1, 1) == [0]  # the fuller node that fits
    assert c.pick(c.group("batch", "g"), 2, 2) is None  # n1 has 1 free: no 2 x 2
    c.release(first)
    assert c.free == [4, 4]


def test_mig_packing_and_a_gpu_whole_again() -> None:
    c = Cluster(TINY)
    g = c.group("mig", "g")
    allocs = [c.allocate(c.pick(g, 1, 0, s) or [], 0, s) for s in (3, 3, 1)]
    assert c.free == [3, 4] and list(c.slots[0].values()) == [0]  # 3+3+1 = 7 slices on one GPU
    more = c.allocate(c.pick(g, 1, 0, 1) or [], 0, 1)  # the split GPU is full: a second one is split
    assert c.free == [2, 4]
    for a in (*allocs, more):
        c.release(a)
    assert c.free == [4, 4] and c.slots[0] == {}


def test_priority_factors() -> None:
    p = Params()
    assert priority(p, 7 * 86400, 0.5, 1.0, 0.0) == 70000 + 25000 + 1000000
    assert priority(p, 14 * 86400, 0, 0, 0) == 70000  # age is capped at PriorityMaxAge
    fs = FairShare(half_life_s=100, accounts=2)
    fs.charge("A", 300.0)
    fs.charge("B", 100.0)
    assert fs.factor("A") == 2 ** (-0.75 * 2) and fs.factor("C") == 1.0
    fs.decay_to(100)
    assert fs.usage["A"] == 150.0 and fs.total == 200.0


def test_percentile_nearest_rank() -> None:
    assert percentile([], 50) is None
    assert percentile([5, 1, 3, 2, 4], 50) == 3 and percentile(list(range(1, 101)), 95) == 95


def test_outputs() -> None:
    text = "job_id,user,gpu_num,node_num,submit_time,duration,time_limit\na,u,8,2,0,100,10\nb,u,4,1,10,50,10\n"
    result = run(text)
    assert jobs_csv(result, "epoch").splitlines() == [
        "job_id,submit_time,start_time,end_time,partition,qos,nodes,gpus,preempted,requeues",
        "a,0,0,100,batch,normal,2,8,0,0",
        "b,10,100,150,batch,normal,1,4,0,0"]
    s = summary(result, "tiny")
    assert s["all"]["wait_s"]["p50"] == 0 and s["all"]["wait_s"]["p95"] == 90
    assert s["all"]["gpu_utilisation"] == round((800 + 200) / (8 * 150), 4)
    assert s["partitions"]["batch"]["jobs"] == 2
    other = dict(s, policy="other", rejected=2)
    table = differences([s, other])
    assert "other - tiny" in table.splitlines()[0]
    assert [ln.split()[-1] for ln in table.splitlines() if ln.startswith("rejected")] == ["2"]
