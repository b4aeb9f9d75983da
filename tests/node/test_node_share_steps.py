# SPDX-License-Identifier: Apache-2.0
"""MigStep and MpsStep (slurm_gpu/node/share_steps.py) run for real: the entry points
``slurm-gpu-prolog``/``-epilog``/``-task-prolog`` as subprocesses, with the real nvidia-ml-py over the
stand-in libnvidia-ml.so.1 and the stand-in nvidia-cuda-mps-control, a policy whose h100x8 nodes serve
dynamic MIG, and a drain recorder. As root for the unprivileged user ``labuser`` (the MPS daemon runs
as the job's user)."""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import needs_other_user
from tests.nvml_standin.shared import standin_lib, state, write_node

try:
    USER = pwd.getpwnam("labuser")
except KeyError:
    USER = None
pytestmark = pytest.mark.skipif(os.geteuid() != 0 or USER is None,
                                reason="needs root and the unprivileged user labuser (the hooks run as root)")
REPO = Path(__file__).resolve().parents[2]
STANDIN = REPO / "tests" / "nvml_standin"
BIN = Path(sys.executable).parent
JOB = 5151
NODE = "h100n1"
MIG_UUID = re.compile(r"MIG-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}")




def dynamic_policy(dst: Path) -> Path:
    """The lab policy with the h100x8 nodes in dynamic MIG mode (and H100 MIG profiles declared)."""
    text = (REPO / "examples" / "policies" / "university.yaml").read_text()
    text = text.replace("../topology/", f"{REPO}/examples/topology/")
    text = text.replace("    mig_capable: true\n    features: [hopper, nvlink]",
                        "    mig_capable: true\n    mig_profiles: [1g.10gb, 2g.20gb, 3g.40gb, 7g.80gb]\n"
                        "    features: [hopper, nvlink]")
    text = text.replace("    nodes: h100n[1-2]\n", "    nodes: h100n[1-2]\n    mig_mode: dynamic\n")
    assert text.count("mig_mode: dynamic") == 2  # and a100n1, dynamic in the lab policy itself
    assert "mig_profiles: [1g.10gb, 2g.20gb, 3g.40gb, 7g.80gb]\n    feat" in text
    dst.write_text(text)
    return dst


class Node:
    def __init__(self, root: Path, lib: Path) -> None:
        self.root, self.lib = root, lib
        self.state_file = root / "node.state"
        write_node(self.state_file)
        self.record = root / "drain.argv"
        self.scontrol = root / "scontrol-recorder"
        self.scontrol.write_text(f"#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> {self.record}\n")
        self.scontrol.chmod(0o755)
        (root / "kmsg").write_text("")
        self.policy = dynamic_policy(root / "policy.yaml")
        h = root / "hooks"
        self.conf = root / "hooks.conf"
        self.conf.write_text(
            f"log = {h}/log/hooks.log\nstate_dir = {h}/state\ntask_dir = {h}/task\njobmap_dir = {h}/jobmap\n"
            f"accounting_file = {h}/acct/gpu-jobs.jsonl\ntextfile_dir = {h}/textfile\nscontrol = {self.scontrol}\n"
            f"kmsg = {root}/kmsg\nkill_grace_s = 2\nnvml_timeout_s = 30\npolicy = {self.policy}\n"
            f"mps_dir = {h}/mps\nmps_control = {STANDIN}/bin/nvidia-cuda-mps-control\n")
        self.mps_dir = h / "mps"

    def env(self, comment: str, gpus: str = "2", **extra: str) -> dict[str, str]:
        env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": str(JOB), "SLURM_JOB_UID": str(USER.pw_uid),
               "SLURM_JOB_GID": str(USER.pw_gid), "SLURMD_NODENAME": NODE, "SLURM_JOB_GPUS": gpus,
               "CUDA_VISIBLE_DEVICES": gpus, "SLURM_JOB_COMMENT": comment, "LD_LIBRARY_PATH": str(self.lib),
               "SLURM_GPU_NVML_STANDIN": str(self.state_file), "SLURM_GPU_HOOKS_CONF": str(self.conf),
               "PYTHONWARNINGS": "error"}
        env.update(extra)
        return env

    def run(self, phase: str, comment: str, **kw: str) -> subprocess.CompletedProcess:
        r = subprocess.run([str(BIN / f"slurm-gpu-{phase}")], env=self.env(comment, **kw), capture_output=True,
                           text=True, timeout=90, check=False, cwd=self.root,
                           user=USER.pw_uid if phase == "task-prolog" else None)
        assert "Traceback" not in r.stderr, r.stderr
        return r

    def gpus(self) -> list[dict]:
        return state.read(self.state_file)["gpus"]

    def drained(self) -> str:
        return self.record.read_text() if self.record.exists() else ""


@pytest.fixture(scope="module")
def lib() -> Path:
    return standin_lib()


@pytest.fixture
def node(lib: Path):
    needs_other_user(USER.pw_name)  # the task prolog runs as the job's user, with this interpreter
    root = Path(tempfile.mkdtemp(prefix="slurm-gpu-share-steps-", dir="/tmp"))
    os.chmod(root, 0o755)  # the job's user reads its task file and traverses to its MPS pipe directory
    try:
        yield Node(root, lib)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def alive(pid: int) -> bool:
    """A running process (a zombie waiting for a reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _mig(g: dict) -> dict:
    return {k: v for k, v in g.items() if k.startswith(("gi.", "ci.", "mig_"))}


def test_dynamic_mig_job_gets_two_mig_uuids_and_the_gpu_returns_to_its_default(node: Node):
    before = node.gpus()
    comment = "my run slurm-gpu:mig=3g.40gb:2"
    p = node.run("prolog", comment)
    assert p.returncode == 0, p.stderr
    mid = node.gpus()
    assert mid[2]["mig_current"] == "1" and sum(k.startswith("ci.") for k in mid[2]) == 2
    assert [_mig(g) for i, g in enumerate(mid) if i != 2] == [_mig(g) for i, g in enumerate(before) if i != 2]
    t = node.run("task-prolog", comment)
    assert t.returncode == 0, t.stderr
    (line,) = [ln for ln in t.stdout.splitlines() if ln.startswith("export CUDA_VISIBLE_DEVICES=")]
    uuids = line.split("=", 1)[1].split(",")
    assert len(uuids) == 2 and all(MIG_UUID.fullmatch(u) for u in uuids)
    assert sorted(v.split(":", 1)[1] for k, v in mid[2].items() if k.startswith("ci.")) == sorted(uuids)
    e = node.run("epilog", "comment changed by the user")  # the epilog never trusts the comment
    assert e.returncode == 0, e.stderr
    assert [_mig(g) for g in node.gpus()] == [_mig(g) for g in before]
    assert node.drained() == ""


@pytest.mark.parametrize("comment, message", [
    ("slurm-gpu:mig=4g.40gb:1", "MIG profile 4g.40gb is not offered"),
    ("slurm-gpu:mig=3g.40gb:3", "needs 9 compute slices"),
    ("slurm-gpu:mps=90", "outside the allowed 10-50%"),
    ("slurm-gpu:mig=3g.40gb:2 slurm-gpu:mps=25", "2 slurm-gpu: tokens"),
    ("slurm-gpu:gpu=everything", "bad slurm-gpu: token"),
])
def test_a_request_that_cannot_be_served_fails_the_job_not_the_node(node: Node, comment: str, message: str):
    before = node.gpus()
    p = node.run("prolog", comment)
    assert p.returncode == 0, p.stderr
    t = node.run("task-prolog", comment)
    assert t.returncode == 3, (t.stdout, t.stderr)
    assert message in t.stdout and "print slurm-gpu: GPU set-up for job" in t.stdout
    assert [(_mig(g), g["compute_mode"]) for g in node.gpus()] == [(_mig(g), g["compute_mode"]) for g in before]
    assert not node.mps_dir.exists() or not any(node.mps_dir.iterdir())
    assert node.run("epilog", comment).returncode == 0
    assert node.drained() == ""


def test_mig_on_a_node_type_without_dynamic_mode_is_refused(node: Node):
    p = node.run("prolog", "slurm-gpu:mig=1g.10gb:1", SLURMD_NODENAME="a100mig1", SLURM_JOB_GPUS="1",
                 CUDA_VISIBLE_DEVICES="1")  # static MIG (a100n1 is dynamic in the lab policy)
    assert p.returncode == 0
    t = node.run("task-prolog", "slurm-gpu:mig=1g.10gb:1", SLURMD_NODENAME="a100mig1")
    assert t.returncode == 3 and "does not serve per-job MIG layouts" in t.stdout


def test_mps_job_gets_its_directories_and_leaves_no_daemon_and_the_compute_mode_restored(node: Node):
    comment = "slurm-gpu:mps=25"
    modes = [g["compute_mode"] for g in node.gpus()]
    p = node.run("prolog", comment, SLURM_JOB_GPUS="1,3", CUDA_VISIBLE_DEVICES="1,3")
    assert p.returncode == 0, p.stderr
    assert [g["compute_mode"] for g in node.gpus()] == [m if i not in (1, 3) else "3" for i, m in enumerate(modes)]
    t = node.run("task-prolog", comment)
    assert t.returncode == 0, t.stderr
    pipe = node.mps_dir / str(JOB) / "pipe"
    assert f"export CUDA_MPS_PIPE_DIRECTORY={pipe}" in t.stdout.splitlines()
    assert "export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25" in t.stdout.splitlines()
    st = pipe.stat()
    assert (st.st_uid, st.st_mode & 0o777) == (USER.pw_uid, 0o700)
    daemon = int(__import__("json").loads((pipe / "standin-state.json").read_text())["pid"])
    assert alive(daemon)  # the job's daemon runs
    e = node.run("epilog", "", SLURM_JOB_GPUS="1,3", CUDA_VISIBLE_DEVICES="1,3")
    assert e.returncode == 0, e.stderr
    assert not alive(daemon)
    assert [g["compute_mode"] for g in node.gpus()] == modes
    assert not (node.mps_dir / str(JOB)).exists()
    assert node.run("epilog", "").returncode == 0  # twice: nothing left to do
    assert node.drained() == ""


def test_no_driver_a_plain_gpu_job_runs_and_a_mig_job_fails_without_drain(node: Node):
    node.state_file.unlink()  # no state file: the stand-in answers DRIVER_NOT_LOADED
    for comment, rc in (("", 0), ("slurm-gpu:mig=3g.40gb:2", 3)):
        assert node.run("prolog", comment).returncode == 0
        t = node.run("task-prolog", comment)
        assert t.returncode == rc, t.stdout
        assert node.run("epilog", comment).returncode == 0
    assert "NVML is not usable" in t.stdout
    assert node.drained() == ""


@pytest.mark.parametrize("comment", ["slurm-gpu:mps=25", "slurm-gpu:mig=3g.40gb:2"])
def test_an_unreadable_policy_fails_the_job_not_open(node: Node, comment: str):
    """Before: the step's Unavailable was a log line ("skipped") and the job ran on a whole, unshared GPU."""
    before = node.gpus()
    missing = str(node.root / "no-such-policy.yaml")
    assert node.run("prolog", comment, SLURM_GPU_HOOKS_POLICY=missing).returncode == 0
    t = node.run("task-prolog", comment, SLURM_GPU_HOOKS_POLICY=missing)
    assert t.returncode == 3, (t.stdout, t.stderr)
    assert "set-up failed: policy" in t.stdout and "no-such-policy.yaml" in t.stdout
    assert node.run("epilog", comment, SLURM_GPU_HOOKS_POLICY=missing).returncode == 0
    assert [(_mig(g), g["compute_mode"]) for g in node.gpus()] == [(_mig(g), g["compute_mode"]) for g in before]
    assert node.drained() == ""


def test_an_unexpected_exception_in_the_mps_step_fails_the_job_and_the_epilog_cleans_up(node: Node):
    """A gid past 32 bits: os.fchown raises OverflowError (no OSError, so gpu_config's outcome does not
    catch it) half-way through the set-up. Before: "internal error" in the log and the job ran without MPS."""
    comment = "slurm-gpu:mps=25"
    modes = [g["compute_mode"] for g in node.gpus()]
    p = node.run("prolog", comment, SLURM_JOB_GID=str(2**32))
    assert p.returncode == 0 and "OverflowError" in p.stderr, p.stderr
    t = node.run("task-prolog", comment)
    assert t.returncode == 3, (t.stdout, t.stderr)
    assert "mps set-up failed: internal error: OverflowError" in t.stdout
    assert "export CUDA_MPS_PIPE_DIRECTORY" not in t.stdout
    assert (node.mps_dir / str(JOB)).exists()  # what the set-up left ...
    assert node.run("epilog", comment).returncode == 0
    assert not (node.mps_dir / str(JOB)).exists()  # ... the epilog removes
    assert [g["compute_mode"] for g in node.gpus()] == modes
    assert node.drained() == ""


def test_a_prolog_that_runs_out_of_time_fails_an_mps_job(node: Node):
    """A call that hangs before the MPS step ran (the accounting step's): the runner gives up after
    nvml_timeout_s. Before: no task file, and the job ran without MPS. A job without a request runs."""
    state.write(node.state_file, state.load_fixture("h100-8gpu"), hang="nvmlDeviceGetAccountingMode")
    for comment, rc in (("slurm-gpu:mps=25", 3), ("", 0)):
        p = node.run("prolog", comment, SLURM_GPU_HOOKS_NVML_TIMEOUT_S="3")
        assert p.returncode == 0 and "did not answer within 3 s" in p.stderr, p.stderr
        t = node.run("task-prolog", comment)
        assert t.returncode == rc, (t.stdout, t.stderr)
        assert ("GPU set-up did not finish: the prolog did not answer within 3 s" in t.stdout) == (rc == 3)
        assert node.run("epilog", comment, SLURM_GPU_HOOKS_NVML_TIMEOUT_S="3").returncode == 0
    assert node.drained() == ""
