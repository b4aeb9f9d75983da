# SPDX-License-Identifier: Apache-2.0
"""Shared by the simulator's tests: the table-test policy and a one-call simulation of a CSV text."""

from __future__ import annotations

from pathlib import Path

from slurm_gpu.policy import load_policy
from slurm_gpu.sim.engine import Result, simulate
from slurm_gpu.sim.params import Params
from slurm_gpu.sim.traces import read_trace

DATA = Path(__file__).resolve().parent / "data"
TINY = load_policy(str(DATA / "tiny.yaml"))  # 2 nodes x 4 GPUs; partitions batch (5), prio (10), spot (1), mig


def run(csv_text: str, **params: object) -> Result:
    trace = read_trace(csv_text.strip().splitlines(), "t.csv")
    return simulate(trace, TINY, Params(bf_interval_s=1, **params))  # type: ignore[arg-type]


def schedule(result: Result) -> dict[str, tuple[int | None, int | None]]:
    """job id -> (start, end) of the last run."""
    return {j.job_id: (j.start, j.end) for j in result.jobs}
