# SPDX-License-Identifier: Apache-2.0
"""Markers in the real Slurm lab: a 2-node, 4-task srun step takes its ranks from Slurm's environment,
every rank marks its shard, and a step counts only when all four have marked (a rank that does not
mark leaves the previous step the resume point). The batch script itself, which is no step, marks
as a single process. Integration test (marker ``slurm``)."""

from __future__ import annotations

import json
import os

import pytest

pytestmark = pytest.mark.slurm


def test_a_four_rank_step_completes_only_when_every_rank_marked(slurm_lab) -> None:  # type: ignore[no-untyped-def]
    from slurm_gpu.lab.demo import find_gpusub

    exe = find_gpusub()
    assert exe is not None, "gpusub is not installed"
    ckpt = f"{os.path.join(os.path.dirname(exe), 'python')} -m slurm_gpu.cli.ckpt_mark"
    work = slurm_lab.workdir("ckpt")
    d = os.path.join(work, "ck")
    script = os.path.join(work, "job.sh")
    with open(script, "w", encoding="utf-8") as fh:
        fh.write(f"""#!/bin/bash
#SBATCH -N 2 -n 4 --ntasks-per-node=2 -t 3 -o {work}/out.txt
export GPUSUB_CKPT_DIR={d}
set -e
srun bash -c '{ckpt} mark {work}/shard-7-$SLURM_PROCID --step 7'
srun bash -c 'if [ $SLURM_PROCID != 2 ]; then {ckpt} mark {work}/shard-8-$SLURM_PROCID --step 8; fi'
echo "resume=$({ckpt} resume)"
srun -n 4 bash -c 'echo "rank$SLURM_PROCID=$({ckpt} resume)"' | sort
{ckpt} mark {work}/batch --step 3 -q
{ckpt} status > {work}/status.json
""")
    os.chmod(script, 0o755)
    job = slurm_lab.sbatch([script], cwd=work)
    try:
        state = slurm_lab.wait(job, timeout_s=120)
    finally:
        if slurm_lab.state(job) not in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"):
            slurm_lab.cancel(job)
    with open(os.path.join(work, "out.txt"), encoding="utf-8") as fh:
        out = fh.read()
    assert state == "COMPLETED", out
    lines = out.splitlines()
    assert f"resume={work}/shard-7-0" in lines, out  # step 8 lacks rank 2: step 7 is the resume point
    for rank in range(4):  # every rank resumes from its own shard
        assert f"rank{rank}={work}/shard-7-{rank}" in lines, out
    step7 = [line for line in lines if "marked step 7 (rank" in line]
    step8 = [line for line in lines if "marked step 8 (rank" in line]
    assert len(step7) == 4 and any(line.endswith(": complete") for line in step7), out  # the last rank saw it
    assert len(step8) == 3 and all(line.endswith("waiting for the other ranks") for line in step8), out
    with open(os.path.join(work, "status.json"), encoding="utf-8") as fh:
        status = json.load(fh)
    # the batch script is no step: its own mark is a complete single-process step 3
    assert [(s["step"], s["world_size"]) for s in status["complete"]] == [(7, 4), (3, 1)]
    hosts = set()
    for rank in range(4):
        with open(os.path.join(d, f"gpusub-marker.7.{rank}.json"), encoding="utf-8") as fh:
            m = json.load(fh)
        assert (m["rank"], m["world_size"], m["job_id"]) == (rank, 4, str(job))
        hosts.add(m["host"])
    assert len(hosts) == 2  # two nodes marked
