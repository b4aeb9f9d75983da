# SPDX-License-Identifier: Apache-2.0
"""gres.conf and slurm.conf for static-MIG node types (slurm_gpu.emit.gres_conf, docs/mig_mps.md):
one ``MultipleFiles=`` line per MIG device with the parent GPU and its capability devices, the node's
``Gres=`` per MIG type, the accounting TRES; and Slurm 22.05's own slurmd reads the emitted gres.conf
(``slurmd -G``) with the types and counts that slurm.conf declares."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from slurm_gpu.emit import gres_conf, slurm_conf
from slurm_gpu.emit.gres_conf import mig_cap_minors, static_mig_lines, static_mig_types
from slurm_gpu.policy import load_policy
from slurm_gpu.topology import load_topology_file
from slurm_gpu.topology.slurmconf import gres_conf_lines

ROOT = Path(__file__).resolve().parents[2]
MIG_POLICY = ROOT / "examples" / "policies" / "mig" / "university-mig.yaml"
UNIVERSITY = ROOT / "examples" / "policies" / "university.yaml"


def loaded(path: Path = MIG_POLICY):
    policy = load_policy(str(path))
    return policy, {nt.name: load_topology_file(nt.topology) for nt in policy.node_types}


def test_capability_minors_follow_the_drivers_mig_minors_table() -> None:
    # /proc/driver/nvidia-caps/mig-minors: config 1, monitor 2, gpu0/gi0/access 3, gpu0/gi0/ci0/access 4, ...
    # Slurm's gres.conf MIG example names gpu0/gi2: nvidia-cap21 and its compute instance nvidia-cap22
    assert mig_cap_minors(0, 0) == (3, 4)
    assert mig_cap_minors(0, 0, 7) == (3, 11)
    assert mig_cap_minors(0, 1) == (12, 13)
    assert mig_cap_minors(0, 2) == (21, 22)
    assert mig_cap_minors(0, 14, 7) == (129, 137)  # the last of GPU 0
    assert mig_cap_minors(1, 0) == (138, 139)  # GPU 1 starts right after
    for bad in ((0, 15), (0, -1), (-1, 0), (0, 0, 8)):
        with pytest.raises(ValueError):
            mig_cap_minors(*bad)


def test_a_static_node_type_lists_each_mig_device_once() -> None:
    policy, topos = loaded()
    nt = policy.node_type("a100mig")
    assert nt is not None and nt.mig_mode == "static"
    lines = static_mig_lines(nt, topos["a100mig"])
    assert len(lines) == nt.gpus * len(nt.mig_layout) == 12
    files = [re.search(r"MultipleFiles=(\S+)", line).group(1).split(",") for line in lines]  # type: ignore[union-attr]
    caps = [f for fs in files for f in fs[1:]]
    assert len(caps) == len(set(caps)) == 24  # no capability device shared between two MIG devices
    # per GPU, in the declared layout order; each device's first file is its own GPU's
    per_gpu = [files[i:i + 3] for i in range(0, 12, 3)]
    topo = topos["a100mig"]
    for g, devices in zip(topo.gpus, per_gpu, strict=True):
        assert {fs[0] for fs in devices} == {f"/dev/nvidia{g.device_minor}"}
    types = [re.search(r" Type=(\S+)", line).group(1) for line in lines]  # type: ignore[union-attr]
    assert types == ["a100_3g.40gb", "a100_2g.20gb", "a100_2g.20gb"] * 4
    # the same Cores= as the whole-GPU lines of the same topology
    whole = gres_conf_lines(topo, "a100n2", "a100")
    cores_of = {}
    for line in whole:
        m = re.search(r"File=/dev/nvidia(?:\[(\d+)-(\d+)\]|(\d+)) Cores=(\S+)", line)
        assert m
        lo, hi = (int(m.group(1)), int(m.group(2))) if m.group(1) else (int(m.group(3)), int(m.group(3)))
        for minor in range(lo, hi + 1):
            cores_of[f"/dev/nvidia{minor}"] = m.group(4)
    for line, fs in zip(lines, files, strict=True):
        assert line.endswith(f" Cores={cores_of[fs[0]]}")


def test_only_static_node_types_change() -> None:
    policy, topos = loaded()
    text = gres_conf.gres_conf(policy, topos)
    assert "NodeName=a100n1 Name=gpu Type=a100 File=/dev/nvidia[0-1]" in text  # dynamic: whole GPUs
    assert "NodeName=h100n[1-2] Name=gpu Type=h100 File=" in text
    # the university (lab) policy: its only static node type is a100x4mig (node a100mig1)
    uni = gres_conf.gres_conf(*loaded(UNIVERSITY))
    assert {ln.split()[0] for ln in uni.splitlines() if "MultipleFiles" in ln} == {"NodeName=a100mig1"}
    assert static_mig_types(policy.node_type("a100x4")) == []  # type: ignore[arg-type]
    assert static_mig_types(policy.node_type("h100x8")) == []  # type: ignore[arg-type]


def test_slurm_conf_declares_the_mig_types_gres_conf_lists() -> None:
    policy, topos = loaded()
    conf = slurm_conf.slurm_conf(policy, topos)
    node = next(line for line in conf.splitlines() if line.startswith("NodeName=a100n2 "))
    declared = dict(item.rsplit(":", 1) for item in re.search(r" Gres=(\S+)", node).group(1).split(","))  # type: ignore[union-attr]
    listed = Counter(f"gpu:{m}" for m in re.findall(r"NodeName=a100n2 Name=gpu Type=(\S+)",
                                                     gres_conf.gres_conf(policy, topos)))
    assert {k: int(v) for k, v in declared.items()} == dict(listed) == {"gpu:a100_3g.40gb": 4, "gpu:a100_2g.20gb": 8}
    assert "Gres=gpu:a100:4" in next(line for line in conf.splitlines() if line.startswith("NodeName=a100n1 "))
    tres = next(line for line in conf.splitlines() if line.startswith("AccountingStorageTRES="))
    assert tres == ("AccountingStorageTRES=gres/gpu,gres/gpu:h100,gres/gpu:a100,gres/gpu:a100_3g.40gb,"
                    "gres/gpu:a100_2g.20gb")


@pytest.mark.slurm
@pytest.mark.slurm
def test_slurmd_reads_the_emitted_mig_gres_conf(tmp_path: Path, slurm_lab) -> None:  # type: ignore[no-untyped-def]
    """Slurm's own parser: ``slurmd -N a100n2 -G`` with the emitted lines, in a private directory
    (character devices made with mknod, as the lab's fake GPUs; no daemon is started). From 23.x slurmd
    creates its auth context first: the lab's munged must be up (the fixture)."""
    slurmd = shutil.which("slurmd") or ("/usr/sbin/slurmd" if os.path.exists("/usr/sbin/slurmd") else None)
    if slurmd is None or os.geteuid() != 0:
        pytest.skip("needs slurmd and root (mknod)")
    policy, topos = loaded()
    (tmp_path / "spool").mkdir()
    dev = tmp_path / "dev"
    (dev / "nvidia-caps").mkdir(parents=True)
    lines = gres_conf.gres_lines(policy, topos, str(dev))
    mine = [line for line in lines if line.startswith("NodeName=a100n2 ")]
    paths = {f for line in mine for f in re.search(r"MultipleFiles=(\S+)", line).group(1).split(",")}  # type: ignore[union-attr]
    for path in sorted(paths):
        minor = int(re.search(r"(\d+)$", path).group(1))  # type: ignore[union-attr]
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(195 if "caps" not in path else 511, minor))
    conf = slurm_conf.slurm_conf(policy, topos)
    node = next(line for line in conf.splitlines() if line.startswith("NodeName=a100n2 "))
    (tmp_path / "gres.conf").write_text("AutoDetect=off\n" + "\n".join(mine) + "\n")
    (tmp_path / "slurm.conf").write_text("\n".join([
        "ClusterName=migtest", "SlurmctldHost=localhost", "GresTypes=gpu", "SelectType=select/cons_tres",
        f"SlurmdSpoolDir={tmp_path}/spool", f"SlurmdPidFile={tmp_path}/slurmd.pid", "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none", "SlurmdParameters=config_overrides", f"{node} Port=25998",
        "PartitionName=mig Nodes=a100n2 State=UP"]) + "\n")
    res = subprocess.run([slurmd, "-N", "a100n2", "-G"], env={"SLURM_CONF": str(tmp_path / "slurm.conf"),
                         "PATH": "/usr/sbin:/usr/bin:/bin"}, capture_output=True, text=True, timeout=60)
    out = res.stdout + res.stderr
    got = Counter(re.findall(r"Gres Name=gpu Type=(\S+) Count=1 ", out))
    assert got == {"a100_3g.40gb": 4, "a100_2g.20gb": 8}, out
    # (24.11 in a namespace without a hwloc cache may log xcpuinfo_hwloc_topo_load: not about GRES)
    # 26.05.5's slurmd (cgroup/v1) also resets its memory limit, which a CI root's read-only cgroup mount refuses
    # ("Read-only file system", "Cannot reset slurmd memory limits"): the machine's errors, not the gres.conf's
    errors = [ln for ln in out.lower().splitlines() if "error" in ln and "xcpuinfo_hwloc_topo_load" not in ln
              and "read-only file system" not in ln and "cannot reset slurmd memory limits" not in ln]
    assert errors == [], out
    for line in mine:  # every device with its own files, in slurmd's reading
        files = re.search(r"MultipleFiles=(\S+)", line).group(1)  # type: ignore[union-attr]
        assert f"File={files} " in out, (files, out)
