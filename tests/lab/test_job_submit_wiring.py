# SPDX-License-Identifier: Apache-2.0
"""The lab runs its own policy compiled into job_submit.lua (issue 10, part 6): the slurm.conf text, the
atomic install, and the running lab."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
from pathlib import Path

import pytest

from slurm_gpu.emit.job_submit import compile_policy
from slurm_gpu.errors import SlurmGpuError
from slurm_gpu.lab import clients
from slurm_gpu.lab.config import LabPaths, LabRuntime, slurm_conf
from slurm_gpu.lab.control import default_hooks, default_policy_path
from slurm_gpu.lab.jobsubmit import install_policy_script, install_text
from slurm_gpu.lab.spec import LabSpec
from slurm_gpu.policy import load_policy

SPEC = LabSpec(nodes=(), gres_lines=(), partitions=(), qos=(), gpu_types=("h100",))
VERSIONS = ((22, 5, 8), (24, 11, 5))


def conf(hooks, version=(22, 5, 8)) -> str:
    return slurm_conf(SPEC, LabRuntime(version=version, hostname="vm", paths=LabPaths("/x/lab"), hooks=hooks))


@pytest.mark.parametrize("version", VERSIONS)
def test_by_default_the_lab_runs_its_policy_compiled(version, monkeypatch):
    monkeypatch.delenv("SLURM_GPU_LAB_JOB_SUBMIT", raising=False)
    hooks = default_hooks()
    assert hooks.job_submit == "policy"
    text = conf(hooks, version)
    assert re.findall(r"^JobSubmitPlugins=.*$", text, re.M) == ["JobSubmitPlugins=lua"]
    assert "/x/lab/etc/job_submit.lua (compiled from the lab policy)" in text


def test_no_job_submit_leaves_the_plugin_unset(monkeypatch):
    monkeypatch.delenv("SLURM_GPU_LAB_JOB_SUBMIT", raising=False)
    for hooks in (default_hooks(job_submit_policy=False),  # lab up --no-job-submit
                  dataclasses.replace(default_hooks(), job_submit_policy=False)):
        assert hooks.job_submit is None
        assert "JobSubmitPlugins" not in conf(hooks)
        assert "job_submit.lua" not in conf(hooks)
    monkeypatch.setenv("SLURM_GPU_LAB_JOB_SUBMIT", "0")  # the fixture and `lab up` without the flag
    assert default_hooks().job_submit is None
    assert default_hooks(job_submit_policy=True).job_submit == "policy"  # lab up --job-submit wins


def test_an_explicit_script_wins_and_its_source_is_part_of_the_config(monkeypatch):
    monkeypatch.delenv("SLURM_GPU_LAB_JOB_SUBMIT", raising=False)
    hooks = default_hooks(job_submit_lua="record.lua")
    assert hooks.job_submit == os.path.abspath("record.lua")
    text = conf(hooks)
    assert re.findall(r"^JobSubmitPlugins=.*$", text, re.M) == ["JobSubmitPlugins=lua"]
    assert f"(copied from {os.path.abspath('record.lua')})" in text
    # a lab running the recorder is not "unchanged" for a default `lab up`: it restarts rather than
    # overwriting the recorder's script with the compiled policy
    assert text != conf(default_hooks())


def test_install_is_atomic_world_readable_and_always_a_later_mtime(tmp_path):
    path = install_text("-- one\n", str(tmp_path))
    first = os.stat(path)
    assert Path(path).read_text() == "-- one\n"
    assert first.st_mode & 0o777 == 0o644  # slurmctld runs as SlurmUser
    # replaced within the same second: job_submit/lua reloads only on a later mtime in whole seconds
    install_text("-- two\n", str(tmp_path))
    second = os.stat(path)
    assert Path(path).read_text() == "-- two\n"
    assert int(second.st_mtime) > int(first.st_mtime)
    install_text("-- two\n", str(tmp_path))  # the same text: left alone, no needless reload
    assert os.stat(path).st_mtime == second.st_mtime
    assert os.listdir(tmp_path) == ["job_submit.lua"]  # no temporary file left behind


def test_installed_script_is_the_compiled_lab_policy(tmp_path):
    policy = default_policy_path()
    path = install_policy_script(policy, str(tmp_path))
    assert Path(path).read_text() == compile_policy(load_policy(policy))


def test_a_bad_policy_gives_one_clear_error_and_installs_nothing(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    conf_dir = tmp_path / "etc"
    conf_dir.mkdir()
    with pytest.raises(SlurmGpuError, match=r"cannot compile the lab policy .*bad\.yaml into job_submit\.lua"):
        install_policy_script(str(bad), str(conf_dir))
    assert os.listdir(conf_dir) == []


@pytest.mark.slurm
def test_running_lab_runs_the_compiled_lab_policy(slurm_lab):
    config = clients.run(["scontrol", "show", "config"], slurm_lab.slurm_conf, timeout_s=20, check=True).stdout
    assert re.search(r"^JobSubmitPlugins\s*=\s*lua$", config, re.M), config
    script = os.path.join(slurm_lab.paths.conf_dir, "job_submit.lua")
    assert slurm_lab.policy_path.startswith(slurm_lab.paths.lab_dir)  # the lab's own copy of the policy
    assert Path(script).read_text() == compile_policy(load_policy(slurm_lab.policy_path))
    r = subprocess.run(["runuser", "-u", "slurm", "--", "head", "-c", "1", script], capture_output=True, timeout=10)
    assert r.returncode == 0, r.stderr  # SlurmUser can read it
    job = slurm_lab.sbatch(["--hold", "--gpus=h100:1", "-t", "60", "--wrap=true"])  # a job the policy accepts
    try:
        fields, _ = slurm_lab.show_job(job)
        assert fields["JobState"] == "PENDING"
    finally:
        slurm_lab.cancel(job)
