# SPDX-License-Identifier: Apache-2.0
"""gpusub at Slurm 26.05 (GPUSUB_SLURM_VERSION, no Slurm needed): it refuses ``--gpus-per-node`` with
``--gres=gpu`` as 26.05's sbatch does (tests/sbatch/test_spellings_lab.py compares with the real one), and what
it renders never holds both, whatever the request and the policy add. On 22.05 and 24.11 the same mix is
accepted (one field, the larger count), as their sbatch accepts it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POLICY = os.path.join(ROOT, "examples/policies/university.yaml")


def gpusub(version: str, *args: str, tmp: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "GPUSUB_"))}
    env.update({"SLURM_CONF": "/no/such/file", "GPUSUB_SLURM_VERSION": version, "GPUSUB_POLICY": POLICY,
                "HOME": tmp})
    return subprocess.run([sys.executable, "-c", "from slurm_gpu.cli.gpusub import main; main()", *args],
                          capture_output=True, text=True, timeout=60, env=env, check=False)


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train.sh"
    path.write_text("#!/bin/bash\ntrue\n")
    return str(path)


MIXES = [["--gres=gpu:2", "--gpus-per-node=2"], ["--gpus-per-node=h100:1", "--gres=gpu:h100:2"],
         ["--gres=gpu:h100:1,shard:1", "--gpus-per-node=h100:1"]]


@pytest.mark.parametrize("argv", MIXES)
def test_the_mix_is_refused_on_2605_and_kept_before(tmp_path, script, argv):
    r = gpusub("26.05.5", "--dry-run", *argv, script, tmp=str(tmp_path))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and "--gpus-per-node and --gres=gpu are mutually exclusive" in r.stderr
    for older in ("22.05.8", "24.11.5"):
        r = gpusub(older, "--dry-run", *argv, script, tmp=str(tmp_path))
        assert "mutually exclusive" not in r.stderr, (older, r.stderr)


def test_the_mix_from_a_script_line_is_refused_too(tmp_path):
    path = tmp_path / "train.sh"
    path.write_text("#!/bin/bash\n#SBATCH --gres=gpu:h100:2\ntrue\n")
    r = gpusub("26.05.5", "--dry-run", "--gpus-per-node=h100:2", str(path), tmp=str(tmp_path))
    assert r.returncode == 2 and "mutually exclusive" in r.stderr, r.stderr


REQUESTS = [
    ["--gres=gpu:h100:2"], ["--gpus-per-node=h100:2"], ["--gpus=4"], ["--gres=gpu:h100:8", "--ntasks=8", "-c", "2"],
    ["--gpus-per-node=h100:4", "--ntasks-per-node=4"], ["--gres=gpu:a100:3", "--ntasks=3", "-c", "8"],
    ["--gpu-fraction", "0.5"], ["--gres=gpu:h100:4", "--launch=per-gpu"], ["--gpus-per-node=h100:8", "-N", "2"],
    ["--mem=8G"],
]


@pytest.mark.parametrize("argv", REQUESTS, ids=[" ".join(a) for a in REQUESTS])
def test_what_gpusub_renders_on_2605_never_holds_both(tmp_path, script, argv):
    r = gpusub("26.05.5", "--dry-run", *argv, script, tmp=str(tmp_path))
    if r.returncode != 0:  # a request the policy refuses is refused for its own reason, never for the mix
        assert "mutually exclusive" not in r.stderr, r.stderr
        return
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("#SBATCH ")]
    assert lines, r.stdout
    per_node = any(ln.startswith("#SBATCH --gpus-per-node") for ln in lines)
    gres_gpu = any(ln.startswith("#SBATCH --gres=") and any(i.split(":")[0] == "gpu" for i in ln[15:].split(","))
                   for ln in lines)
    assert not (per_node and gres_gpu), lines
