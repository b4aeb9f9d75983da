# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu admin install`` and ``admin check`` (slurm_gpu/node/install.py), run as the CLI in fresh
processes, as root (the installation must be root's)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="admin install writes root-owned files")
REPO = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).parent / "slurm-gpu")
POLICY = str(REPO / "examples" / "policies" / "university.yaml")
SHIMS = ("prolog.sh", "epilog.sh", "task_prolog.sh", "epilog_ctld.sh")
USER = 1001  # a user's uid (no account needed for chown)


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    r = subprocess.run([CLI, "admin", *args], capture_output=True, text=True, timeout=120, check=False,
                       env={**os.environ, **(env or {})})
    assert "Traceback" not in r.stderr, r.stderr
    return r


@pytest.fixture
def root():
    d = Path(tempfile.mkdtemp(prefix="slurm-gpu-admin-", dir="/tmp"))
    os.chmod(d, 0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_install_writes_root_owned_files_and_prints_the_slurm_lines(root: Path):
    pre = root / "etc"
    r = cli("install", "--prefix", str(pre), "--policy", POLICY, "--job-submit-dir", str(root))
    assert r.returncode == 0, r.stderr
    for name in SHIMS:
        st = (pre / name).lstat()
        assert (st.st_uid, st.st_mode & 0o7777) == (0, 0o755)
        assert f"SLURM_GPU_HOOKS_CONF={pre}/hooks.conf" in (pre / name).read_text()
    st = (pre / "hooks.conf").lstat()
    assert (st.st_uid, st.st_mode & 0o7777) == (0, 0o644)
    assert f"policy = {POLICY}" in (pre / "hooks.conf").read_text().splitlines()
    assert (root / "job_submit.lua").read_text().startswith("--")
    lines = r.stdout.splitlines()
    for key, name in (("Prolog", "prolog.sh"), ("Epilog", "epilog.sh"), ("TaskProlog", "task_prolog.sh"),
                      ("EpilogSlurmctld", "epilog_ctld.sh")):
        assert f"{key}={pre}/{name}" in lines
    assert "JobSubmitPlugins=lua" in lines
    assert not any(ln.startswith("PrologFlags") for ln in lines)  # not needed; costs srun ~100 ms (docs/hooks.md)
    assert any(ln.startswith("NodeName=h100n1 ") for ln in lines)
    assert "# ==> gres.conf <==" in lines and any(ln.startswith("NodeName=a100n1 Name=gpu") for ln in lines)


def test_the_installed_shims_run_their_entry_points_only_where_there_is_work(root: Path):
    pre = root / "etc"
    assert cli("install", "--prefix", str(pre), "--no-job-submit").returncode == 0
    log = root / "hooks.log"
    (pre / "hooks.conf").write_text(f"log = {log}\nstate_dir = {root}/state\ntask_dir = {root}/task\n"
                                    f"jobmap_dir = \naccounting_file = \ntextfile_dir = \n")
    env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "77", "SLURMD_NODENAME": "x", "LD_LIBRARY_PATH": str(root)}

    def shim(name: str, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(["/bin/sh", str(pre / name)], env={**env, **extra}, capture_output=True, text=True,
                              timeout=60, check=False)

    r = shim("prolog.sh")  # a CPU-only job: no Python is started at all
    assert r.returncode == 0 and r.stderr == "" and not log.exists()
    r = shim("prolog.sh", SLURM_JOB_GPUS="0")  # a GPU job on a node without NVML: the entry point runs
    assert r.returncode == 0 and "not found" not in r.stderr, r.stderr
    assert "NVML not usable" in log.read_text()  # ... with this installation's hooks.conf
    r = shim("task_prolog.sh", SLURM_JOB_GPUS="0")  # the prolog left no task file: nothing to print
    assert (r.returncode, r.stdout) == (0, "")
    (root / "task").mkdir(mode=0o755, exist_ok=True)
    (root / "task" / "77").write_text("export CUDA_MPS_PIPE_DIRECTORY=/run/x\n")
    r = shim("task_prolog.sh", SLURM_JOB_GPUS="0")
    assert (r.returncode, r.stdout) == (0, "export CUDA_MPS_PIPE_DIRECTORY=/run/x\n"), r.stderr
    r = shim("task_prolog.sh", SLURM_JOB_GPUS="0", SLURM_GPU_HOOKS_TASK_DIR=str(root / "elsewhere"))
    assert (r.returncode, r.stdout) == (0, "")  # the environment's task_dir wins, as in the entry point


def test_reinstall_keeps_an_edited_hooks_conf_and_replaces_a_planted_symlink(root: Path):
    pre = root / "etc"
    assert cli("install", "--prefix", str(pre), "--no-job-submit").returncode == 0
    (pre / "hooks.conf").write_text("kill_grace_s = 9\n")
    target = root / "victim"
    target.write_text("untouched\n")
    (pre / "epilog.sh").unlink()
    (pre / "epilog.sh").symlink_to(target)
    r = cli("install", "--prefix", str(pre), "--no-job-submit")
    assert r.returncode == 0, r.stderr
    assert f"# unchanged {pre}/hooks.conf" in r.stdout and f"# installed {pre}/epilog.sh" in r.stdout
    assert (pre / "hooks.conf").read_text() == "kill_grace_s = 9\n"
    assert not (pre / "epilog.sh").is_symlink() and target.read_text() == "untouched\n"


def test_install_refuses_a_symlinked_or_writable_prefix(root: Path):
    real = root / "real"
    real.mkdir(mode=0o755)
    (root / "link").symlink_to(real)
    os.lchown(root / "link", USER, USER)  # a user's link (root's own, in root's directory, is followed)
    r = cli("install", "--prefix", str(root / "link"), "--no-job-submit")
    assert r.returncode == 1 and "symlink" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert os.listdir(real) == []
    os.chmod(real, 0o777)
    r = cli("install", "--prefix", str(real), "--no-job-submit")
    assert r.returncode == 1 and "writable by other" in r.stderr
    assert cli("install", "--prefix", str(root / "x"), "--policy", str(root / "missing.yaml")).returncode == 2


def test_install_follows_only_roots_own_symlink(root: Path):
    real = root / "real"
    real.mkdir(mode=0o755)
    (root / "link").symlink_to(real)  # root's link in root's directory (as /var/run -> /run)
    assert cli("install", "--prefix", str(root / "link"), "--no-job-submit").returncode == 0
    assert (real / "prolog.sh").is_file() and not (real / "prolog.sh").is_symlink()


@pytest.mark.parametrize("how", ["owned-by-user", "world-writable", "user's symlink"])
def test_install_refuses_a_job_submit_dir_a_user_controls_like_the_prefix(root: Path, how: str):
    js = root / "js"
    js.mkdir(mode=0o755)
    (js / "job_submit.lua").write_text("-- the site's script\n")
    given = js
    if how == "owned-by-user":
        os.chown(js, USER, USER)
    elif how == "world-writable":
        os.chmod(js, 0o777)
    else:
        given = root / "jslink"
        given.symlink_to(js)
        os.lchown(given, USER, USER)
    pre = root / "etc"
    r = cli("install", "--prefix", str(pre), "--policy", POLICY, "--job-submit-dir", str(given))
    why = {"owned-by-user": f"owned by uid {USER}", "world-writable": "writable by other users",
           "user's symlink": "symlink"}[how]
    assert r.returncode == 1 and why in r.stderr and "--job-submit-dir" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not pre.exists()  # refused before anything was written
    assert os.listdir(js) == ["job_submit.lua"] and (js / "job_submit.lua").read_text() == "-- the site's script\n"
    # the prefix's own rule is the same: a user-owned prefix is refused the same way
    os.chown(js, 0, 0)
    os.chmod(js, 0o755)
    pre.mkdir(mode=0o755)
    os.chown(pre, USER, USER)
    r = cli("install", "--prefix", str(pre), "--policy", POLICY, "--job-submit-dir", str(js))
    assert r.returncode == 1 and f"owned by uid {USER}" in r.stderr and os.listdir(pre) == []


def test_check_passes_on_a_fresh_install_and_names_each_problem(root: Path):
    pre = root / "etc"
    assert cli("install", "--prefix", str(pre), "--policy", POLICY, "--no-job-submit").returncode == 0
    r = cli("check", "--prefix", str(pre), "--node", "h100n1")
    assert r.returncode == 0, r.stdout
    assert all(ln.startswith("ok ") for ln in r.stdout.splitlines()) and "hooks.conf: parses" in r.stdout
    os.chmod(pre / "hooks.conf", 0o666)
    (pre / "task_prolog.sh").unlink()
    with (pre / "prolog.sh").open("a") as f:
        f.write("\n")
    os.chmod(pre / "prolog.sh", 0o644)
    r = cli("check", "--prefix", str(pre), "--node", "h100n1")
    assert r.returncode == 1
    fails = [ln for ln in r.stdout.splitlines() if ln.startswith("FAIL")]
    assert any("hooks.conf: mode 666" in ln for ln in fails)
    assert any("task_prolog.sh: No such file" in ln for ln in fails)
    assert any("prolog.sh: mode 644: not executable" in ln for ln in fails)
    assert len(fails) == 3, r.stdout


def _standin():
    from tests.nvml_standin.shared import standin_lib, state

    return standin_lib(), state


def test_check_compares_the_mig_layout_with_the_policy(root: Path):
    lib, state = _standin()
    shutil.copytree(REPO / "examples", root / "examples")
    pol = root / "examples" / "policies" / "university.yaml"
    text = re.sub(r"    nodes: a100n1\n(    #.*\n)*    mig_mode: dynamic\n",
                  "    nodes: a100n1\n    mig_mode: static\n    mig_layout: [3g.40gb, 2g.20gb, 2g.20gb]\n",
                  pol.read_text())
    assert "mig_layout: [3g.40gb, 2g.20gb, 2g.20gb]" in text
    pol.write_text(text)
    pre = root / "etc"
    assert cli("install", "--prefix", str(pre), "--policy", str(pol), "--no-job-submit").returncode == 0
    st = state.write(root / "node.state", state.load_fixture("h100-8gpu"))  # MIG off: not the declared layout
    env = {"LD_LIBRARY_PATH": str(lib), "SLURM_GPU_NVML_STANDIN": str(st)}
    r = cli("check", "--prefix", str(pre), "--node", "a100n1", env=env)
    assert r.returncode == 1
    assert "FAIL MIG layout: GPU 0,1,2,3 not in the declared MIG enabled: 2g.20gb:2, 3g.40gb:1" in r.stdout, r.stdout
    r = cli("check", "--prefix", str(pre), "--node", "a100n1", env={"LD_LIBRARY_PATH": str(root)})  # no NVML
    assert r.returncode == 0 and "MIG layout: NVML not usable" in r.stdout, r.stdout
