# SPDX-License-Identifier: Apache-2.0
"""DRF (slurm_gpu/sim/drf.py): dominant shares and the progressive-filling order, by hand."""

from __future__ import annotations

from slurm_gpu.sim.drf import dominant_share, drf_order
from slurm_gpu.sim.params import SimJob


def job(idx: int, account: str, submit: int, gpus: float, cpus: int = 0, tier: int = 1) -> SimJob:
    j = SimJob(idx, f"{account}{idx}", submit, 10, None)
    j.account, j.gpus, j.cpus, j.tier = account, gpus, cpus, tier
    return j


CAP = (8.0, 64.0, 0.0)  # 8 GPUs, 64 CPUs, memory not known (left out)


def test_dominant_share_is_the_largest_resource_share() -> None:
    assert dominant_share((2, 8, 0), CAP) == 0.25  # GPUs 2/8 > CPUs 8/64
    assert dominant_share((1, 48, 0), CAP) == 0.75  # CPUs dominate
    assert dominant_share((1, 48, 0), CAP, weight=3) == 0.25  # weighted DRF: share / weight


def test_progressive_filling_order() -> None:
    # A runs 2 GPUs (0.25), B nothing (0): B's b1 first -> B 2/8 = 0.25 ties A: the older job next, A's a1 ->
    # A 3/8; B (0.25) lower: b2 -> B 0.5; then a2
    a1, a2, b1, b2 = job(0, "A", 0, 1), job(1, "A", 1, 1), job(2, "B", 5, 2), job(3, "B", 6, 2)
    got = drf_order([a1, a2, b1, b2], {"A": (2.0, 0.0, 0.0)}, CAP)
    assert [j.job_id for j in got] == ["B2", "A0", "B3", "A1"]


def test_cpu_heavy_jobs_count_by_their_cpus() -> None:
    # A's running job holds 1 GPU but 48 CPUs (dominant 0.75); B holds 4 GPUs (0.5): B goes first
    a, b = job(0, "A", 0, 1, 8), job(1, "B", 1, 1, 8)
    got = drf_order([a, b], {"A": (1.0, 48.0, 0.0), "B": (4.0, 8.0, 0.0)}, CAP)
    assert [j.job_id for j in got] == ["B1", "A0"]


def test_partition_tier_comes_before_drf() -> None:
    low, high = job(0, "A", 0, 1, tier=1), job(1, "B", 1, 1, tier=10)
    got = drf_order([low, high], {"B": (8.0, 0.0, 0.0)}, CAP)
    assert [j.job_id for j in got] == ["B1", "A0"]
