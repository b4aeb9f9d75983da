# SPDX-License-Identifier: Apache-2.0
"""Every job size runs in the lab (issue 8 item 7): srun steps of 1, 2, 4 and 8 tasks, with and without
``--cpu-bind=cores``, inside one sbatch job, all exit 0. The lab machine has 2 real CPUs and the emulated
nodes 32 cores; with task/affinity the 4- and 8-task steps with --cpu-bind=cores failed
("Unable to layout tasks on given cpus", exit 193), see docs/lab.md "Few real CPUs"."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.slurm

STEPS = r"""#!/bin/bash
for n in 1 2 4 8; do
  for bind in "" "--cpu-bind=cores"; do
    srun -n "$n" $bind bash -c 'echo "task $SLURM_PROCID of $SLURM_NTASKS"' > "step-$n${bind:+-cores}.out" 2>&1
    echo "step n=$n bind=${bind:-none} rc=$?"
  done
done
"""


def test_steps_of_every_size_complete(slurm_lab):
    wd = slurm_lab.workdir("steps")
    script = Path(wd, "steps.sh")
    script.write_text(STEPS)
    os.chmod(script, 0o755)
    node = next(n.name for n in slurm_lab.spec.nodes if n.gpu_type == "h100")
    job = slurm_lab.sbatch(["-p", "batch", "-w", node, "-N1", "-n8", "-t", "5", "-o", f"{wd}/out.txt", str(script)],
                           cwd=wd)
    assert slurm_lab.wait(job, timeout_s=180) == "COMPLETED", Path(wd, "out.txt").read_text()
    results = re.findall(r"^step n=(\d+) bind=(\S+) rc=(\d+)$", Path(wd, "out.txt").read_text(), re.M)
    assert [(n, b) for n, b, _ in results] == [(n, b) for n in "1248" for b in ("none", "--cpu-bind=cores")]
    failed = {(n, b): Path(wd, f"step-{n}{'-cores' if b != 'none' else ''}.out").read_text()
              for n, b, rc in results if rc != "0"}
    assert not failed, failed
    for n in (4, 8):  # every task of the big steps ran
        for suffix in ("", "-cores"):
            lines = [ln for ln in Path(wd, f"step-{n}{suffix}.out").read_text().splitlines() if ln.startswith("task")]
            assert sorted(lines) == sorted(f"task {i} of {n}" for i in range(n))
