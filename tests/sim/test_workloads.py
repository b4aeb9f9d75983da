# SPDX-License-Identifier: Apache-2.0
"""Adversarial workloads (slurm_gpu/sim/workloads.py): seeded, shaped as documented, and simulated."""

from __future__ import annotations

import csv

import pytest

from slurm_gpu.sim.engine import simulate
from slurm_gpu.sim.params import Params
from slurm_gpu.sim.report import summary
from slurm_gpu.sim.traces import read_trace
from slurm_gpu.sim.workloads import WORKLOADS, generate
from tests.sim.helpers import TINY


def rows(lines: list[str]) -> list[dict[str, str]]:
    return list(csv.DictReader(lines))


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_seeded_and_readable(name: str) -> None:
    a, b, c = generate(name, 200, 8, 64, seed=1), generate(name, 200, 8, 64, seed=1), generate(name, 200, 8, 64, seed=2)
    assert a == b and a != c and len(a) == 201
    trace = read_trace(a, f"{name}.csv")
    assert len(trace.jobs) == 200 and all(60 <= j.duration <= 86400 for j in trace.jobs)


def test_fragment_mixes_single_gpu_bursts_and_whole_nodes() -> None:
    r = rows(generate("fragment", 1000, 8, 64))
    burst = [x for x in r if x["account"] == "burst"]
    assert {x["gpu_num"] for x in burst} == {"1"} and {x["gpu_num"] for x in r if x["account"] == "wide"} == {"8"}
    assert 0.5 < len(burst) / len(r) < 0.95
    # a burst arrives within a minute of its first job
    spans = []
    for i in range(1, len(r)):
        if r[i]["account"] == "burst" and r[i - 1]["account"] != "burst":
            t0 = int(r[i]["submit_time"])
            k = i
            while k < len(r) and r[k]["account"] == "burst":
                spans.append(int(r[k]["submit_time"]) - t0)
                k += 1
    assert spans and max(spans) <= 60


def test_gang_starve_every_tenth_job_is_half_the_cluster() -> None:
    r = rows(generate("gang-starve", 100, 8, 64))
    gangs = [x for x in r if x["account"] == "gang"]
    assert len(gangs) == 10 and all((x["gpu_num"], x["node_num"]) == ("32", "4") for x in gangs)
    assert {x["gpu_num"] for x in r if x["account"] == "small"} <= {"1", "2", "4"}


def test_split_gives_both_accounts_the_same_work_in_different_shapes() -> None:
    r = rows(generate("split", 2000, 8, 64))
    work = {a: sum(int(x["gpu_num"]) * int(x["duration"]) for x in r if x["account"] == a)
            for a in ("honest", "splitter")}
    assert {x["gpu_num"] for x in r if x["account"] == "splitter"} == {"1"}
    assert {x["gpu_num"] for x in r if x["account"] == "honest"} == {"8"}
    assert 0.7 < work["honest"] / work["splitter"] < 1.4


def test_unknown_workload_and_bad_sizes() -> None:
    with pytest.raises(ValueError, match="unknown workload"):
        generate("nope", 10, 8, 64)
    with pytest.raises(ValueError):
        generate("split", 0, 8, 64)


def test_fragment_workload_fragments_the_tiny_cluster() -> None:
    # 1-GPU bursts leave free GPUs scattered: some samples see free GPUs on nodes with fewer than 4 free
    result = simulate(read_trace(generate("fragment", 300, 4, 8), "f.csv"), TINY, Params())
    frag = summary(result, "tiny")["fragmentation"]
    assert frag["k_node"] == 4 and frag["max_k_node"] > 0 and 0 < frag["mean_k_node"] <= 1
    assert len(frag["series"]) <= 240
