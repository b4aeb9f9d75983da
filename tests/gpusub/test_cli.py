# SPDX-License-Identifier: Apache-2.0
"""gpusub as a user runs it: a subprocess of this checkout's entry point (no Slurm needed here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POLICY = os.path.join(ROOT, "examples/policies/university.yaml")


def gpusub(*args: str, env_extra: dict[str, str] | None = None, timeout_s: float = 30,
           cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SBATCH_", "SLURM_", "GPUSUB_"))}
    env.update({"SLURM_CONF": "/no/such/file", "GPUSUB_SLURM_VERSION": "22.05.8"})
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", "from slurm_gpu.cli.gpusub import main; main()", *args],
                          capture_output=True, text=True, env=env, timeout=timeout_s, cwd=cwd)


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train.sh"
    path.write_text("#!/bin/bash\n#SBATCH --time=30\n#SBATCH --job-name=train\necho \"$@\"\n")
    path.chmod(0o755)
    return str(path)


def test_version():
    r = gpusub("--version")
    assert r.returncode == 0 and r.stdout.strip() == "gpusub, version 0.1.0"


def test_help_lists_our_options_first_and_says_sbatch_options_work():
    r = gpusub("--help")
    assert r.returncode == 0
    text = r.stdout
    assert "Every sbatch option works" in text
    assert text.index("--explain") < text.index("sbatch options:")
    for opt in ("--dry-run", "--test-only", "--wait", "--policy", "--gpu-isolation", "--json"):
        assert opt in text


def test_missing_script_is_one_line_exit_2(tmp_path):
    r = gpusub(str(tmp_path / "nope.sh"))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "nope.sh: no such file" in r.stderr and r.stdout == ""


def test_no_slurm_conf_file_is_one_line_and_fast(script):
    start = time.monotonic()
    r = gpusub(script, env_extra={"GPUSUB_POLICY": POLICY})
    assert r.returncode == 1 and time.monotonic() - start < 10  # sbatch itself would retry for 60 s
    assert r.stderr.count("\n") == 1 and "SLURM_CONF=/no/such/file: no such file" in r.stderr


def test_unreachable_controller_is_bounded(script, tmp_path):
    conf = tmp_path / "slurm.conf"  # a controller port nobody listens on
    conf.write_text("ClusterName=nobody\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=1\n")
    start = time.monotonic()
    r = gpusub(script, env_extra={"SLURM_CONF": str(conf), "GPUSUB_TIMEOUT_S": "3"})
    assert r.returncode == 1 and time.monotonic() - start < 15
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("gpusub: error: ")


def test_dry_run_needs_no_slurm_and_prints_script_and_argv(script):
    r = gpusub("--dry-run", "--gres=gpu:h100:8", "--ntasks-per-node=8", "-c", "2", "--mem-per-gpu=8G", script,
               "a b", "$(id)", env_extra={"GPUSUB_POLICY": POLICY})
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("#!/bin/bash")
    # the job's shape is the user's; placement options only
    assert "#SBATCH --ntasks=" not in r.stdout and "#SBATCH --ntasks-per-node=8" in r.stdout
    assert "#SBATCH --ntasks-per-socket=4" in r.stdout and "#SBATCH --cpus-per-task=2" in r.stdout
    assert "set -- 'a b' '$(id)'" in r.stdout
    assert r.stderr.startswith("gpusub: dry run; would submit with: sbatch --parsable")
    # stdout is exactly the file that would be submitted, and it is valid bash
    assert subprocess.run(["bash", "-n"], input=r.stdout, text=True).returncode == 0


def test_explain_json_contract(script):
    r = gpusub("--explain", "--json", "--gres=gpu:a100:3", script, env_extra={"GPUSUB_POLICY": POLICY})
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    for key in ("accepted", "class", "partition", "qos", "gres", "added_options", "warnings", "reasons",
                "message", "binding"):
        assert key in data
    assert data["accepted"] is True and data["gres"] == "gpu:a100:3"
    # one task (sbatch's default), 3 a100 over two sockets, DefCpuPerGPU=8 from the policy: 24 CPUs
    # span both sockets; placement only
    assert data["binding"]["launch"] == "batch" and data["binding"]["gpus_per_node"] == 3
    assert data["binding"]["sbatch_options"] == ["--gres-flags=enforce-binding"]


def test_explain_rejected_exits_1(script):
    r = gpusub("--explain", "--gres=gpu:h100:17", script, env_extra={"GPUSUB_POLICY": POLICY})
    assert r.returncode == 1
    r = gpusub("--explain", "--json", "--gres=gpu:h100:17", script, env_extra={"GPUSUB_POLICY": POLICY})
    assert r.returncode == 1 and json.loads(r.stdout)["accepted"] is False


def test_rejected_submission_is_one_line_exit_1(script):
    r = gpusub("--gres=gpu:h100:17", script, env_extra={"GPUSUB_POLICY": POLICY})
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "rejected by policy" in r.stderr


@pytest.mark.parametrize("args, word", [
    (["--gpu-isolation=loose"], "gpu-isolation"),
    (["--nodes=zero"], "nodes"),
])
def test_usage_errors_exit_2(script, args, word):
    r = gpusub(*args, script, env_extra={"GPUSUB_POLICY": POLICY})
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and word in r.stderr


def test_missing_policy_file_is_usage_error(script):
    r = gpusub("--policy", "/no/such/policy.yaml", "--dry-run", script)
    assert r.returncode == 2 and "--policy /no/such/policy.yaml: no such file" in r.stderr


def test_without_policy_gpusub_is_sbatch(script, tmp_path):
    # no --policy, no $GPUSUB_POLICY, and (on this machine) no /etc/slurm-gpu/policy.yaml
    if os.path.exists("/etc/slurm-gpu/policy.yaml"):
        pytest.skip("a site policy is installed on this machine")
    r = gpusub("--dry-run", "-p", "debug", script)
    assert r.returncode == 0, r.stderr
    assert "#SBATCH --partition=debug" in r.stdout and "--ntasks" not in r.stdout


def test_help_and_version_after_other_options():
    r = gpusub("--json", "-p", "batch", "--help")
    assert r.returncode == 0 and "Every sbatch option works" in r.stdout
    r = gpusub("--json", "--version")
    assert r.returncode == 0 and r.stdout.strip() == "gpusub, version 0.1.0"


def test_constraint_no_node_of_the_type_has_is_refused(script):
    # sbatch --test-only refuses it too ("Requested node configuration is not available", 22.05.8 lab):
    # the verdict (check_nodes) says so before submission, with the reason
    r = gpusub("--explain", "--json", "--constraint=a100", "--gres=gpu:h100:2", "-t", "60", script,
               env_extra={"GPUSUB_POLICY": POLICY, "GPUSUB_NODES": "policy"})
    assert r.returncode == 1, r.stderr
    out = json.loads(r.stdout)
    assert not out["accepted"] and "gpu:h100:2 per node and --constraint=a100 needed, 0 found" in out["message"]
    r = gpusub("--explain", "--json", "--constraint=mig", "--gres=gpu:h100:2", "-t", "60", script,
               env_extra={"GPUSUB_POLICY": POLICY})
    assert json.loads(r.stdout)["warnings"] == []  # h100 nodes carry the mig feature (emitted Features=)
