# SPDX-License-Identifier: Apache-2.0
"""Per-job MPS through the adapter, the stand-in libnvidia-ml.so.1 and the stand-in
nvidia-cuda-mps-control, as root for the unprivileged user ``labuser`` (skipped, with the reason,
when not root or without that user): directories, owner, symlinks, compute modes, daemon lifecycle."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.nvml_standin.shared import standin_env, standin_lib, state, write_node

STANDIN = Path(__file__).resolve().parents[1] / "nvml_standin"
MPS = str(STANDIN / "bin" / "nvidia-cuda-mps-control")
PRELUDE = """\
import json
from slurm_gpu.adapters import gpu_config as G
from slurm_gpu.sharing import mps as P
from slurm_gpu.policy.model import Isolation
def out(o):
    print(json.dumps([o.ok, o.fault, o.message, dict(o.env)]))
"""



try:
    USER = pwd.getpwnam("labuser")
except KeyError:
    USER = None
pytestmark = pytest.mark.skipif(os.geteuid() != 0 or USER is None,
                                reason="needs root and the unprivileged user labuser (setuid daemon, chown)")


def alive(pid: int) -> bool:
    """Running (a zombie, which a container's init may never reap, counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


class Env:
    def __init__(self, lib: Path, root: Path, node_state: Path):
        self.lib, self.root, self.node_state = lib, root, node_state
        self.base = str(root / "mps")
        self.pids: list[int] = []

    def run(self, code: str, timeout: float = 60) -> list:
        env = standin_env(self.lib, self.node_state,
                          base={k: v for k, v in os.environ.items() if not k.startswith("SLURM_GPU_")})
        r = subprocess.run([sys.executable, "-c", PRELUDE + code], env=env, capture_output=True, text=True,
                           timeout=timeout, check=False)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout.strip().splitlines()[-1])

    def plan(self, job: int, pct: int = 25) -> str:
        return f"P.plan({job}, {pct}, Isolation(), base={self.base!r})"

    def start(self, job: int, gpus=(1, 3), timeout_s: float = 20, **extra: str) -> list:
        got = self.run(f"out(G.start_mps({self.plan(job)}, {list(gpus)}, {USER.pw_uid}, {USER.pw_gid}, "
                       f"mps_control={MPS!r}, timeout_s={timeout_s}, extra_env={extra!r}))")
        standin = Path(self.base) / str(job) / "pipe" / "standin-state.json"
        if standin.exists():
            self.pids.append(json.loads(standin.read_text())["pid"])
        return got

    def stop(self, job: int, timeout_s: float = 20) -> list:
        plan = f"P.teardown_plan({job}, base={self.base!r})"  # what the epilog uses: no share needed
        return self.run(f"out(G.stop_mps({plan}, mps_control={MPS!r}, timeout_s={timeout_s}))")

    def modes(self) -> list[str]:
        return [g["compute_mode"] for g in state.read(self.node_state)["gpus"]]


@pytest.fixture
def mps_env():
    lib = standin_lib()
    root = Path(tempfile.mkdtemp(prefix="slurm-gpu-mps-test-", dir="/tmp"))
    os.chmod(root, 0o755)  # the job's user must traverse to its pipe directory
    # GPU 3 PROHIBITED before the job: restored to that, not to default
    write_node(root / "node.state", edit=lambda data: data["gpus"][3].update(compute_mode=2))
    env = Env(lib, root, root / "node.state")
    yield env
    for pid in env.pids:  # only what this test started
        if alive(pid):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass  # it ended between the check and the kill
    shutil.rmtree(root, ignore_errors=True)


def test_lifecycle_dirs_owner_daemon_and_compute_modes(mps_env):
    e = mps_env
    before = e.modes()
    ok, fault, msg, env = e.start(101)
    assert (ok, fault, msg) == (True, "", ""), msg
    job = Path(e.base) / "101"
    assert env == {"CUDA_MPS_PIPE_DIRECTORY": str(job / "pipe"), "CUDA_MPS_LOG_DIRECTORY": str(job / "log"),
                   "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25"}
    for path, uid, mode in ((Path(e.base), 0, 0o755), (job, 0, 0o755), (job / "state.json", 0, 0o600),
                            (job / "pipe", USER.pw_uid, 0o700), (job / "log", USER.pw_uid, 0o700)):
        st = os.lstat(path)
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (uid, mode), path
    assert e.modes() == [m if i not in (1, 3) else "3" for i, m in enumerate(before)]  # EXCLUSIVE_PROCESS
    daemon = e.pids[-1]
    status = Path(f"/proc/{daemon}/status").read_text()
    assert f"Uid:\t{USER.pw_uid}\t{USER.pw_uid}" in status and f"Gid:\t{USER.pw_gid}\t{USER.pw_gid}" in status
    assert (job / "log" / "control.log").stat().st_uid == USER.pw_uid  # written by the user, not root
    client = subprocess.run([MPS], input="get_default_active_thread_percentage\n", capture_output=True, text=True,
                            env={"CUDA_MPS_PIPE_DIRECTORY": env["CUDA_MPS_PIPE_DIRECTORY"], "PATH": "/usr/bin:/bin"},
                            user=USER.pw_uid, group=USER.pw_gid, extra_groups=[], timeout=20, check=False)
    assert client.stdout.strip() == "25.0"
    visible = json.loads((job / "pipe" / "standin-state.json").read_text())
    assert visible["running"] is True

    assert e.stop(101)[:3] == [True, "", ""]
    assert not alive(daemon)
    assert e.modes() == before  # GPU 3 back to PROHIBITED, GPU 1 to DEFAULT
    assert not job.exists()
    assert e.stop(101)[:3] == [True, "", ""]  # the epilog run twice


def test_planted_symlink_for_the_job_dir_is_not_followed(mps_env):
    e = mps_env
    victim = e.root / "victim"
    victim.mkdir(mode=0o755)
    (victim / "keep").write_text("x")
    os.makedirs(e.base, mode=0o755)
    os.symlink(victim, Path(e.base) / "102")
    before = e.modes()
    ok, fault, msg, _ = e.start(102)
    assert (ok, fault) == (False, "node") and "not a directory" in msg
    assert os.lstat(victim).st_uid == 0 and sorted(os.listdir(victim)) == ["keep"]
    assert e.modes() == before  # nothing else was changed


def test_leftover_job_dir_with_a_planted_pipe_symlink_is_replaced(mps_env):
    e = mps_env
    victim = e.root / "victim"
    victim.mkdir(mode=0o700)
    (victim / "secret").write_text("x")
    stale = Path(e.base) / "103"
    stale.mkdir(parents=True)
    os.symlink(victim, stale / "pipe")
    ok, _, msg, _ = e.start(103)
    assert ok, msg
    assert not (stale / "pipe").is_symlink() and os.lstat(stale / "pipe").st_uid == USER.pw_uid
    st = os.lstat(victim)
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o700) and (victim / "secret").read_text() == "x"
    assert e.stop(103)[0]


def test_base_writable_by_others_is_refused(mps_env):
    e = mps_env
    os.makedirs(e.base)
    os.chmod(e.base, 0o777)
    ok, fault, msg, _ = e.start(104)
    assert (ok, fault) == (False, "node") and "writable by nobody else" in msg
    assert not (Path(e.base) / "104").exists()


@pytest.mark.parametrize(("switch", "why"), [("refuse_quit", "did not quit and were killed"),
                                             ("hang_quit", "'quit' got no answer within 2s")])
def test_daemon_that_does_not_quit_is_killed_and_modes_restored(mps_env, switch, why):
    e = mps_env
    before = e.modes()
    assert e.start(105, SLURM_GPU_MPS_STANDIN_FAIL=switch)[0]
    daemon = e.pids[-1]
    ok, fault, msg, _ = e.stop(105, timeout_s=2)
    assert (ok, fault) == (False, "node") and why in msg
    assert not alive(daemon)
    assert e.modes() == before and not (Path(e.base) / "105").exists()
