# SPDX-License-Identifier: Apache-2.0
"""The lab keeps what its user needs readable and alive: its own copy of the policy (with includes and
topology files), and a gpusub the lab user can run when the checkout is private (a clone in /root)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from slurm_gpu.lab.runtime import copy_policy
from slurm_gpu.policy import load_policy
from slurm_gpu.topology import load_topology_file

ROOT = Path(__file__).resolve().parents[2]


def test_copy_policy_keeps_includes_and_topology_captures(tmp_path):
    copied = copy_policy(str(ROOT / "examples" / "policies" / "smallgroup.yaml"), str(tmp_path / "pf"))
    assert copied == str(tmp_path / "pf" / "policies" / "smallgroup.yaml")
    policy = load_policy(copied)
    assert policy.includes == (str(tmp_path / "pf" / "policies" / "smallgroup-hardware.yaml"),)
    for nt in policy.node_types:
        assert nt.topology.startswith(str(tmp_path / "pf")), nt.topology
        assert load_topology_file(nt.topology).gpus  # its nvidia-smi/lscpu captures came along
    # a second copy replaces the first (no stale files)
    (tmp_path / "pf" / "stale").write_text("x")
    copy_policy(str(ROOT / "examples" / "policies" / "university.yaml"), str(tmp_path / "pf"))
    assert not (tmp_path / "pf" / "stale").exists()
    assert oct(os.stat(tmp_path / "pf" / "policies" / "university.yaml").st_mode & 0o777) == "0o644"


def _lab_env_exports(lab_dir: str) -> dict[str, str]:
    r = subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", "lab", "env"], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, SLURM_GPU_LAB_DIR=lab_dir), check=True)
    return dict(ln[len("export "):].split("=", 1) for ln in r.stdout.splitlines() if ln.startswith("export "))


@pytest.mark.slurm
def test_lab_env_policy_outlives_the_checkout_it_came_from(slurm_lab, tmp_path):
    """`lab up` from another checkout on a healthy lab with the same config: GPUSUB_POLICY points into the
    lab dir, so it still works once that checkout is gone."""
    other = tmp_path / "other-checkout" / "examples"
    shutil.copytree(ROOT / "examples" / "policies", other / "policies")
    shutil.copytree(ROOT / "examples" / "topology", other / "topology")
    r = subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", "lab", "up", "--policy",
                        str(other / "policies" / "university.yaml")], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, SLURM_GPU_LAB_DIR=slurm_lab.paths.lab_dir))
    assert r.returncode == 0 and "already up and healthy" in r.stderr, r.stderr  # no restart
    shutil.rmtree(tmp_path / "other-checkout")
    policy = _lab_env_exports(slurm_lab.paths.lab_dir)["GPUSUB_POLICY"]
    assert policy.startswith(slurm_lab.paths.lab_dir + "/") and Path(policy).is_file()
    loaded = load_policy(policy)
    # every node type's topology capture resolves from the lab's copy (the lab's machines have 2 sockets each)
    assert [load_topology_file(nt.topology).sockets for nt in loaded.node_types] == [2] * len(loaded.node_types) \
        and len(loaded.node_types) >= 2
    # and the lab user can read it
    probe = subprocess.run(["runuser", "-u", slurm_lab.user, "--", "cat", policy], capture_output=True, timeout=30)
    assert probe.returncode == 0, probe.stderr


@pytest.mark.slurm
def test_demo_from_a_private_checkout(slurm_lab, tmp_path):
    """A checkout the lab user cannot read (tmp_path lies under /tmp/pytest-of-root, mode 700, like a clone
    in /root): `slurm-gpu lab demo` from its own venv still submits with gpusub, through the lab's copy."""
    clone = tmp_path / "clone"
    for part in ("slurm_gpu", "examples"):
        shutil.copytree(ROOT / part, clone / part, ignore=shutil.ignore_patterns("__pycache__"))
    python = os.path.realpath(sys.executable)
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], capture_output=True, text=True, check=True, timeout=60).stdout.strip())
    # the clone itself, and this environment's dependencies (a real clone has them installed in its venv)
    (site / "clone.pth").write_text(f"{clone}\n{sysconfig.get_paths()['purelib']}\n")
    gpusub = venv / "bin" / "gpusub"
    gpusub.write_text(f"#!{venv}/bin/python\nimport sys\nfrom slurm_gpu.cli.gpusub import main\nsys.exit(main())\n")
    gpusub.chmod(0o755)
    blocked = subprocess.run(["runuser", "-u", slurm_lab.user, "--", str(gpusub), "--version"], capture_output=True,
                             text=True, timeout=60)
    assert blocked.returncode != 0  # the situation of the bug: 'Permission denied ... exit 126'
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "slurm_gpu.cli.main", "lab", "demo"], capture_output=True,
                       text=True, timeout=300, cwd="/", env=dict(os.environ, SLURM_GPU_LAB_DIR=slurm_lab.paths.lab_dir))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "submitted with gpusub" in r.stdout and " COMPLETED " in r.stdout
    copy = re.search(rf"-- ({re.escape(slurm_lab.paths.lab_dir)}/runtime/[0-9a-f]+)/bin/gpusub ", r.stdout)
    assert copy, r.stdout  # the lab's world-readable copy ran
    shutil.rmtree(copy.group(1))
