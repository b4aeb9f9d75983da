# SPDX-License-Identifier: Apache-2.0
"""The `slurm-gpu lab` CLI: offline behaviour (no Slurm) and, marked slurm, status and the demo."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurm_gpu.cli.main import cli
from slurm_gpu.cpulist import parse_cpulist


def test_lab_help_lists_the_verbs():
    r = CliRunner().invoke(cli, ["lab", "--help"])
    assert r.exit_code == 0
    for verb in ("up", "down", "status", "env", "demo"):
        assert f"  {verb} " in r.output


def test_env_prints_exports_for_the_lab_dir(tmp_path):
    r = CliRunner().invoke(cli, ["lab", "env", "--lab-dir", str(tmp_path / "lab")])
    assert r.exit_code == 0
    exports = dict(line[len("export ") :].split("=", 1) for line in r.output.splitlines() if line.startswith("export "))
    assert exports["SLURM_CONF"] == str(tmp_path / "lab" / "etc" / "slurm.conf")
    policy = exports["GPUSUB_POLICY"]
    assert os.path.isabs(policy) and Path(policy).is_file() and policy.endswith("university.yaml")


def test_env_follows_slurm_gpu_lab_dir(tmp_path):
    r = CliRunner().invoke(cli, ["lab", "env"], env={"SLURM_GPU_LAB_DIR": str(tmp_path)})
    assert f"export SLURM_CONF={tmp_path}/etc/slurm.conf" in r.output


def test_status_without_a_lab_exits_1(tmp_path):
    r = CliRunner().invoke(cli, ["lab", "status", "--lab-dir", str(tmp_path / "none")])
    assert r.exit_code == 1 and "no lab" in r.output


def test_down_without_a_lab_is_a_no_op(tmp_path):
    r = CliRunner().invoke(cli, ["lab", "down", "--lab-dir", str(tmp_path / "none")])
    assert r.exit_code == 0


def test_up_with_missing_policy_is_a_usage_error(tmp_path):
    r = CliRunner().invoke(cli, ["lab", "up", "--lab-dir", str(tmp_path), "--policy", str(tmp_path / "no.yaml")])
    assert r.exit_code == 2 and "no.yaml" in r.output


def _bin(name: str) -> str:
    return os.path.join(sys.prefix, "bin", name)


@pytest.mark.slurm
def test_status_of_the_running_lab(slurm_lab):
    r = subprocess.run(
        [_bin("slurm-gpu"), "lab", "status"],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, SLURM_GPU_LAB_DIR=slurm_lab.paths.lab_dir),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.rstrip().endswith("healthy")
    for node in slurm_lab.spec.node_names:
        assert node in r.stdout


@pytest.mark.slurm
def test_demo_ends_with_a_completed_gpusub_job(slurm_lab):
    r = subprocess.run(
        [_bin("slurm-gpu"), "lab", "demo"],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, SLURM_GPU_LAB_DIR=slurm_lab.paths.lab_dir),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    rows = dict(re.findall(r"^  (\S.*?)\s{2,}(.*)$", r.stdout, re.M))
    assert "COMPLETED" in rows["job"] and "submitted with gpusub" in rows["job"]
    assert rows["node"] in slurm_lab.spec.node_names
    job_gpus = re.search(r"SLURM_JOB_GPUS=(\S+)", rows["GPUs"]).group(1).split(",")
    assert len(job_gpus) == 2 and len(set(job_gpus)) == 2  # hello-gpu.sh asks for 2 H100
    assert parse_cpulist(rows["CPU_IDs (scontrol show job -d)"])
    from slurm_gpu.lab.demo import task_plugin

    binds = [v for k, v in rows.items() if k.endswith("SLURM_CPU_BIND*")]
    if task_plugin(slurm_lab.lab) == "task/none":  # nobody binds in the lab (docs/lab.md "Few real CPUs")
        assert binds and all(v.endswith("(not bound: TaskPlugin=task/none, see docs/lab.md)") for v in binds), rows
    else:
        assert binds and all("SLURM_CPU_BIND=" in v for v in binds), rows
