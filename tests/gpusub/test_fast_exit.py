# SPDX-License-Identifier: Apache-2.0
"""gpusub as a command ends without the interpreter's teardown (slurm_gpu.cli.gpusub._exit_now): its
buffered output must still arrive whole, with the right exit code, and a reader that leaves early is
no error. Runs this checkout's entry point in a subprocess with block-buffered stdout; no Slurm needed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POLICY = os.path.join(ROOT, "examples/policies/university.yaml")
MAIN = "from slurm_gpu.cli.gpusub import main; main()"


def env_of(tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SBATCH_", "SLURM_", "GPUSUB_")) and k != "PYTHONUNBUFFERED"}
    env.update({"SLURM_CONF": "/no/such/file", "GPUSUB_SLURM_VERSION": "22.05.8",
                "XDG_CACHE_HOME": str(tmp_path / "cache")})
    return env


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train.sh"
    path.write_text("#!/bin/bash\n#SBATCH --time=30\necho one line\n")  # the output stays in stdout's buffer
    return str(path)


def test_a_buffered_dry_run_arrives_whole(tmp_path, script):
    with open(script, encoding="utf-8") as fh:
        payload = fh.read()
    r = subprocess.run([sys.executable, "-c", MAIN, "--dry-run", "--policy", POLICY, "--gpus=h100:1", script],
                       capture_output=True, text=True, env=env_of(tmp_path), timeout=60)
    assert r.returncode == 0, r.stderr
    assert payload in r.stdout and r.stdout.endswith('exit "$gpusub_rc"\n')
    assert r.stderr.startswith("gpusub: dry run; would submit with: sbatch --parsable")


def test_a_rejection_keeps_its_exit_code_and_output(tmp_path, script):
    r = subprocess.run([sys.executable, "-c", MAIN, "--explain", "--json", "--policy", POLICY, "--gpus=h100:999",
                        script], capture_output=True, text=True, env=env_of(tmp_path), timeout=60)
    assert r.returncode == 1, r.stderr
    assert json.loads(r.stdout)["accepted"] is False


def test_a_reader_that_left_is_no_error(tmp_path, script):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before gpusub writes: its flush meets EPIPE
    try:
        r = subprocess.run([sys.executable, "-c", MAIN, "--dry-run", "--policy", POLICY, "--gpus=h100:1", script],
                           stdout=write_end, stderr=subprocess.PIPE, text=True, env=env_of(tmp_path), timeout=60)
    finally:
        os.close(write_end)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr
