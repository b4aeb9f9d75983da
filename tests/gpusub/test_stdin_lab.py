# SPDX-License-Identifier: Apache-2.0
"""The script on standard input with no option at all, as sbatch takes it (issue 19): a heredoc and a
pipe, submitted by the lab user through the real Slurm; the job runs the script's own lines."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from slurm_gpu.lab.demo import find_gpusub

SCRIPT = "#!/bin/bash\n#SBATCH --gpus=1\n#SBATCH -t 5\necho from-stdin-$SLURM_JOB_ID\n"


def test_bare_gpusub_reads_the_script_from_stdin_as_sbatch_does(tmp_path):
    """No argument, no terminal: the script is standard input; an empty one gets sbatch's refusal."""
    gpusub = find_gpusub()
    assert gpusub
    env = dict(os.environ, GPUSUB_POLICY=os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                                                       "policies", "university.yaml"))
    r = subprocess.run([gpusub], stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2 and r.stderr == "gpusub: error: standard input: Batch script is empty!\n", r.stderr
    r = subprocess.run([sys.executable, "-m", "slurm_gpu.cli.gpusub", "--help"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "usage" in r.stdout.lower()


@pytest.mark.slurm
@pytest.mark.parametrize("form", ["heredoc", "pipe"])
def test_script_on_stdin_without_options_runs(slurm_lab, form):
    work = slurm_lab.workdir("stdin")
    exe = find_gpusub()
    command = (f"{exe} <<'EOF'\n{SCRIPT}EOF\n" if form == "heredoc"
               else f"printf '%s' {_shq(SCRIPT)} | {exe}")
    r = slurm_lab.run(["bash", "-c", command], cwd=work, timeout_s=60)
    assert r.returncode == 0, r.stderr
    m = re.fullmatch(r"Submitted batch job (\d+)\n", r.stdout)
    assert m, r.stdout
    job = int(m.group(1))
    try:
        assert slurm_lab.wait(job, timeout_s=120) == "COMPLETED"
    finally:
        slurm_lab.cancel(job)
    with open(os.path.join(work, f"slurm-{job}.out"), encoding="utf-8") as fh:
        assert f"from-stdin-{job}\n" in fh.read()


def _shq(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"
