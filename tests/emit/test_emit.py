# SPDX-License-Identifier: Apache-2.0
"""The emitter from policy to Slurm config (pure), its golden files, the lab's use of it, and
``slurm-gpu admin emit``.

Golden files (tests/golden/emit/) hold the emitted text of examples/policies/university.yaml. A missing
golden file FAILS; they are (re)written only with SLURM_GPU_UPDATE_GOLDEN=1, and the diff is reviewed
in the commit.
"""

from __future__ import annotations

import difflib
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_gpu.emit import gres_conf, sacctmgr, slurm_conf
from slurm_gpu.policy import load_policy
from slurm_gpu.policy.model import Partition, Qos
from slurm_gpu.topology import load_topology_file

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "examples" / "policies" / "university.yaml"
GOLDEN_DIR = ROOT / "tests" / "golden" / "emit"
UPDATE = os.environ.get("SLURM_GPU_UPDATE_GOLDEN") == "1"


def loaded():
    policy = load_policy(str(POLICY))
    return policy, {nt.name: load_topology_file(nt.topology) for nt in policy.node_types}


def emitted() -> dict[str, str]:
    policy, topos = loaded()
    qos = sacctmgr.qos_add_commands(policy.qos) + sacctmgr.qos_limit_commands(policy.qos)
    return {
        "university.slurm.conf": slurm_conf.slurm_conf(policy, topos, "university.yaml"),
        "university.gres.conf": gres_conf.gres_conf(policy, topos, "/dev", "university.yaml"),
        "university.sacctmgr": sacctmgr.script(qos),
    }


@pytest.mark.parametrize("name", sorted(emitted()))
def test_golden(name):
    text = emitted()[name]
    path = GOLDEN_DIR / name
    if UPDATE:
        GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if not path.exists():
        pytest.fail(f"golden file {path} is missing; create it with SLURM_GPU_UPDATE_GOLDEN=1 and review it")
    want = path.read_text(encoding="utf-8")
    if text != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True), str(path), "emitted"))
        pytest.fail(f"emitted text differs from {path} (SLURM_GPU_UPDATE_GOLDEN=1 rewrites it):\n{diff}")


def test_no_stray_golden_files():
    present = {p.name for p in GOLDEN_DIR.iterdir()} if GOLDEN_DIR.is_dir() else set()
    assert present <= set(emitted()), f"golden files no test reads: {sorted(present - set(emitted()))}"


def test_partition_line_fields():
    p = Partition("spot", ("big",), max_time_min=24 * 60 + 90, default_time_min=30, priority_tier=1, preemptible=True,
                  grace_time_s=120, allowed_qos=("spot",))
    assert slurm_conf.partition_line(p, ["g2", "g1", "g3"]) == (
        "PartitionName=spot Nodes=g[1-3] PriorityTier=1 MaxTime=1-01:30:00 DefaultTime=00:30:00 "
        "PreemptMode=REQUEUE GraceTime=120 AllowQos=spot State=UP")
    p = Partition("batch", ("big",), default=True)
    assert slurm_conf.partition_line(p, []) == (
        "PartitionName=batch Nodes= PriorityTier=1 MaxTime=INFINITE Default=YES PreemptMode=OFF State=UP")


@pytest.mark.parametrize("minutes, text", [(None, "INFINITE"), (30, "00:30:00"), (2 * 24 * 60, "2-00:00:00")])
def test_slurm_time(minutes, text):
    assert slurm_conf.slurm_time(minutes) == text


def test_qos_commands():
    qos = (Qos("normal", priority=50), Qos("spot", priority=10, max_gpus_per_user=24, preempt_mode="requeue"),
           Qos("high", priority=200, max_gpus_per_job=16, max_wall_min=60, preempts=("spot",)))
    assert sacctmgr.qos_add_commands(qos) == [["add", "qos", "spot"], ["add", "qos", "high"]]  # normal exists
    assert sacctmgr.qos_limit_commands(qos)[1:] == [
        ["modify", "qos", "where", "name=spot", "set", "Priority=10", "MaxTRESPerUser=gres/gpu=24",
         "PreemptMode=requeue"],
        ["modify", "qos", "where", "name=high", "set", "Priority=200", "MaxTRESPerJob=gres/gpu=16", "MaxWall=01:00:00",
         "Preempt=spot"]]
    assert sacctmgr.script([["add", "qos", "a b"]]) == "sacctmgr -i add qos 'a b'\n"


def test_the_lab_config_carries_the_emitted_lines():
    """One emitter: the lab's slurm.conf/gres.conf/sacctmgr commands contain exactly what admin emit prints."""
    from slurm_gpu.lab.config import LabPaths, LabRuntime, render_all
    from slurm_gpu.lab.control import policy_spec_factory

    files = render_all(policy_spec_factory(str(POLICY))("/dev"),
                       LabRuntime(version=(22, 5, 8), hostname="vm", paths=LabPaths("/x")))
    policy, topos = loaded()
    conf = files["slurm.conf"].splitlines()
    assert [ln for ln in conf if ln.startswith("PartitionName=")] == slurm_conf.partition_lines(policy, topos)
    for _name, _nt, line in slurm_conf.node_lines(policy, topos):
        assert sum(1 for ln in conf if ln.startswith(line + " ")) == 1, line
    assert files["gres.conf"].splitlines()[2:] == gres_conf.gres_lines(policy, topos)
    acct = files["accounting.txt"].splitlines()
    for cmd in sacctmgr.qos_add_commands(policy.qos) + sacctmgr.qos_limit_commands(policy.qos):
        assert "sacctmgr -i " + " ".join(cmd) in acct


def _admin(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", "admin", "emit", *args],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)


def test_admin_emit_prints_the_golden_text():
    golden = {"slurm.conf": "university.slurm.conf", "gres.conf": "university.gres.conf"}
    for what, name in golden.items():
        r = _admin(str(POLICY), "--what", what)
        assert r.returncode == 0, r.stderr
        assert r.stdout == (GOLDEN_DIR / name).read_text(encoding="utf-8")
    r = _admin(str(POLICY), "--what", "sacctmgr")
    assert r.returncode == 0 and r.stdout.endswith((GOLDEN_DIR / "university.sacctmgr").read_text(encoding="utf-8"))
    lines = [ln for ln in r.stdout.splitlines() if not ln.startswith("#")]
    assert all(shlex.split(ln)[:2] == ["sacctmgr", "-i"] for ln in lines) and lines
    r = _admin(str(POLICY))
    assert r.returncode == 0 and [ln for ln in r.stdout.splitlines() if ln.startswith("# ==> ")] == [
        "# ==> slurm.conf <==", "# ==> gres.conf <==", "# ==> sacctmgr <=="]


def test_admin_emit_bad_input(tmp_path):
    r = _admin(str(tmp_path / "none.yaml"))
    assert r.returncode == 2 and "does not exist" in r.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nname: x\nnode_types: 3\n")
    r = _admin(str(bad))
    assert r.returncode == 1 and f"{bad}:3:" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = _admin(str(POLICY), "--what", "nope")
    assert r.returncode == 2
