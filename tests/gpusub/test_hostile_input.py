# SPDX-License-Identifier: Apache-2.0
"""Hostile input through the real command lines (issue 9 "Hardened input"): each case runs gpusub or
slurm-gpu in a subprocess with a 1 GiB address-space limit and a timeout, and must end with the
documented exit code, exactly one line on stderr and no traceback."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POLICY = os.path.join(ROOT, "examples", "policies", "university.yaml")
LIMIT_AS = 1 << 30


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))


def run(argv, tmp_path, env_extra=None, stdin=subprocess.DEVNULL, timeout=20):
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GPUSUB_SLURM_VERSION": "22.05.8",
           "SLURM_CONF": str(tmp_path / "no-slurm.conf"), "LC_ALL": "C.UTF-8", **(env_extra or {})}
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", argv[0], *argv[1:]], capture_output=True, text=True, env=env,
                          stdin=stdin, timeout=timeout, preexec_fn=_limits, cwd=str(tmp_path))
    return proc, time.monotonic() - start


GPUSUB = "from slurm_gpu.cli.gpusub import main; main()"
SLURM_GPU = "from slurm_gpu.cli.main import main; main()"


def one_line(proc, rc):
    assert proc.returncode == rc, (proc.returncode, proc.stdout[-500:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_dev_zero_as_script_is_refused_without_reading_it(tmp_path):
    proc, took = run([GPUSUB, "--dry-run", "/dev/zero"], tmp_path)
    assert "not a regular file" in one_line(proc, 2) and took < 10


def test_fifo_as_script_does_not_hang(tmp_path):
    fifo = tmp_path / "job.sh"
    os.mkfifo(fifo)
    proc, took = run([GPUSUB, "--dry-run", str(fifo)], tmp_path)
    assert "not a regular file" in one_line(proc, 2) and took < 10


def test_huge_script_is_refused_with_sbatch_s_limit(tmp_path):
    big = tmp_path / "big.sh"
    with open(big, "wb") as fh:
        fh.write(b"#!/bin/bash\n")
        fh.truncate(4 * 1024 * 1024 + 1)
    proc, _ = run([GPUSUB, "--dry-run", str(big)], tmp_path)
    assert "4194304" in one_line(proc, 2)


def test_script_from_stdin_as_sbatch_reads_it(tmp_path):
    with open(os.devnull, "rb") as empty:
        proc, _ = run([GPUSUB, "--dry-run", "-t", "5"], tmp_path, stdin=empty)
    # an empty standard input is the empty script sbatch refuses
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    script = tmp_path / "in.sh"
    script.write_text("#!/bin/bash\n#SBATCH -J from-stdin\necho hi\n")
    with open(script, "rb") as fh:
        proc, _ = run([GPUSUB, "--dry-run", "-t", "5"], tmp_path, stdin=fh)
    assert proc.returncode == 0, proc.stderr
    assert "#SBATCH --job-name=from-stdin" in proc.stdout and "echo hi" in proc.stdout


def test_unwritable_cache_dir_changes_nothing(tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\nhostname\n")
    env = {"XDG_CACHE_HOME": "/proc/x", "GPUSUB_POLICY": POLICY, "HOME": "/proc/x"}
    proc, _ = run([GPUSUB, "--dry-run", "--gres=gpu:h100:2", "-t", "10", str(script)], tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    assert "#SBATCH --gres=gpu:h100:2" in proc.stdout


def test_policy_that_is_a_directory_says_so(tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\nhostname\n")
    proc, _ = run([GPUSUB, "--dry-run", "--policy=/etc", str(script)], tmp_path)
    line = one_line(proc, 1)  # an unreadable or invalid policy is 1; a missing one is a usage error (2)
    assert "directory" in line and "no such file" not in line


def test_model_params_out_of_range_is_one_clear_line(tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\nhostname\n")
    proc, _ = run([GPUSUB, "--explain", "--policy", POLICY, "--model-params=1e400", "-G", "h100:1",
                   str(script)], tmp_path)
    line = one_line(proc, 2)
    assert "inf" not in line.lower().replace("info", "")


@pytest.mark.parametrize("argv", [
    [GPUSUB, "--explain", "--policy", POLICY, "-G", "h100:2", "-t", "10"],
    [SLURM_GPU, "topo", "show", "--from-file", os.path.join(ROOT, "examples", "topology", "h100x8.yaml")],
    [SLURM_GPU, "admin", "emit", POLICY],
], ids=["gpusub-explain", "topo-show", "admin-emit"])
def test_a_closed_pipe_is_not_an_error(tmp_path, argv):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\nhostname\n")
    argv = [*argv, str(script)] if argv[0] == GPUSUB else argv
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GPUSUB_SLURM_VERSION": "22.05.8",
           "SLURM_CONF": str(tmp_path / "none")}
    reader = subprocess.Popen(["head", "-c", "1"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    proc = subprocess.run([sys.executable, "-c", *argv], stdout=reader.stdin, stderr=subprocess.PIPE, text=True,
                          env=env, timeout=30, cwd=str(tmp_path))
    reader.stdin.close()
    reader.wait(timeout=10)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 141), proc.returncode
