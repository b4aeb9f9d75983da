# SPDX-License-Identifier: Apache-2.0
"""End to end: a synthetic trace through a policy and a variant of it; the difference goes the way the
variant says (docs/simulate.md)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from click.testing import CliRunner

from slurm_gpu.cli.main import cli

DATA = Path(__file__).resolve().parent / "data"


def synthetic(seed: int = 5, jobs: int = 300) -> str:
    """Busy spot work (1-4 GPUs, hours) and short prio jobs (4-8 GPUs) arriving through it."""
    rng = random.Random(seed)
    rows = ["job_id,user,gpu_num,node_num,state,submit_time,duration,partition"]
    t = 0
    for i in range(jobs):
        t += rng.randrange(0, 400)
        if rng.random() < 0.3:
            g = rng.choice((4, 8))
            rows.append(f"{i},p{i % 2},{g},{g // 4},COMPLETED,{t},{rng.randrange(60, 600)},prio")
        else:
            rows.append(f"{i},s{i % 5},{rng.choice((1, 2, 4))},1,COMPLETED,{t},{rng.randrange(600, 7200)},spot")
    return "\n".join(rows) + "\n"


def test_without_preemption_prio_jobs_wait_and_spot_jobs_are_never_preempted(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text(synthetic())
    res = CliRunner().invoke(cli, ["simulate", "--policy", str(DATA / "tiny.yaml"), "--policy",
                                   str(DATA / "tiny-nopreempt.yaml"), "--trace", str(tmp_path / "t.csv"),
                                   "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    base = json.loads((tmp_path / "out" / "tiny" / "summary.json").read_text())
    variant = json.loads((tmp_path / "out" / "tiny-nopreempt" / "summary.json").read_text())
    assert base["all"]["started"] == variant["all"]["started"] == 300
    assert base["classes"]["spot"]["preemptions"] > 0 and variant["classes"]["spot"]["preemptions"] == 0
    assert variant["classes"]["prio"]["wait_s"]["p95"] > base["classes"]["prio"]["wait_s"]["p95"]
    assert base["classes"]["spot"]["lost_gpu_hours"] > 0 == variant["classes"]["spot"]["lost_gpu_hours"]
    row = next(ln for ln in res.output.splitlines() if ln.startswith("class spot: preemptions"))
    assert row.split()[-1].startswith("-")  # the variant's change against the first policy
