# SPDX-License-Identifier: Apache-2.0
"""The lab's node types (examples/topology) through the generator, and a real slurmd accepting the result."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from slurm_gpu.topology import load_topology_file, topology_from_json
from slurm_gpu.topology.slurmconf import fake_gpus_conf, gres_conf_lines, node_conf_line

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "topology"


@pytest.fixture(scope="module")
def h100():
    return load_topology_file(EXAMPLES / "h100x8.yaml")


@pytest.fixture(scope="module")
def a100():
    return load_topology_file(EXAMPLES / "a100x4.yaml")


def test_h100x8_shape(h100):
    assert (h100.sockets, h100.cores_per_socket, h100.threads_per_core, h100.memory_mb) == (2, 16, 1, 512000)
    assert [n.id for n in h100.numa_nodes] == [0, 1]
    assert all(g.name == "NVIDIA H100 80GB HBM3" and g.mig_capable for g in h100.gpus)
    assert [h100.gpu_cores(i) for i in range(8)] == [tuple(range(16))] * 4 + [tuple(range(16, 32))] * 4
    assert all(h100.link(f"GPU{a}", f"GPU{b}") == "NV18" for a in range(8) for b in range(8) if a != b)


def test_h100x8_slurm_lines(h100):
    assert gres_conf_lines(h100, "h100n[1-2]", "h100") == [
        "NodeName=h100n[1-2] Name=gpu Type=h100 File=/dev/nvidia[0-3] Cores=0-15",
        "NodeName=h100n[1-2] Name=gpu Type=h100 File=/dev/nvidia[4-7] Cores=16-31",
    ]
    assert node_conf_line(h100, "h100n[1-2]", "h100") == (
        "NodeName=h100n[1-2] Sockets=2 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=512000 Gres=gpu:h100:8"
    )
    assert node_conf_line(h100, "h100n1", None, Port=17001, NodeHostname="vm") == (
        "NodeName=h100n1 Sockets=2 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=512000 Gres=gpu:8 "
        "Port=17001 NodeHostname=vm"
    )


def test_a100x4_gpu_order_not_socket_order(a100):
    assert [g.name for g in a100.gpus] == ["NVIDIA A100-SXM4-80GB"] * 4
    assert [a100.gpu_socket(i) for i in range(4)] == [1, 1, 0, 0]
    assert gres_conf_lines(a100, "a100n1", "a100") == [
        "NodeName=a100n1 Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=16-31",
        "NodeName=a100n1 Name=gpu Type=a100 File=/dev/nvidia[2-3] Cores=0-15",
    ]
    assert gres_conf_lines(a100, "a100n1", "a100", links=True)[2] == (
        "NodeName=a100n1 Name=gpu Type=a100 File=/dev/nvidia2 Cores=0-15 Links=4,4,-1,4"
    )
    assert fake_gpus_conf(a100, "a100").splitlines()[0] == "a100|32|16-31|-1,4,4,4|/dev/nvidia0"


def test_json_round_trip(h100, tmp_path):
    import json

    assert topology_from_json(json.loads(json.dumps(h100.to_json()))) == h100
    f = tmp_path / "n.json"
    f.write_text(json.dumps(h100.to_json()))
    assert load_topology_file(f) == h100


SLURM_CONF = """ClusterName=topotest
SlurmctldHost=localhost
SlurmdSpoolDir={d}/spool
SlurmdPidFile={d}/slurmd.pid
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
SlurmdParameters=config_overrides
{nodes}
PartitionName=all Nodes=ALL Default=YES
"""


def _fake_gpu(path: str, minor: int) -> None:
    """mknod c 195 N (root); without CAP_MKNOD a symlink to a distinct character device that every
    machine has (a container or chroot /dev has no /dev/ttyN)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(195, minor))
    except PermissionError:
        os.symlink(("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx",
                    "/dev/pts/ptmx")[minor], path)


@pytest.mark.skipif(shutil.which("slurmd") is None, reason="needs the slurmd binary (Debian package slurmd)")
@pytest.mark.parametrize("links", [False, True], ids=["grouped", "links"])
def test_real_slurmd_accepts_generated_gres_conf(h100, a100, tmp_path, links):
    """A throwaway `slurmd -G` (prints the merged GRES config and exits) on a temp config; not the lab."""
    dev = tmp_path / "dev"
    dev.mkdir()
    (tmp_path / "spool").mkdir()
    for i in range(8):  # slurmd stat()s File=: character devices, as the lab makes them
        _fake_gpu(str(dev / f"nvidia{i}"), i)
    nodes = [
        node_conf_line(h100, "h100n[1-2]", "h100", NodeHostname="localhost", Port=17901),
        node_conf_line(a100, "a100n1", "a100", NodeHostname="localhost", Port=17903),
    ]
    (tmp_path / "slurm.conf").write_text(SLURM_CONF.format(d=tmp_path, nodes="\n".join(nodes)))
    gres = ["AutoDetect=off"] + gres_conf_lines(h100, "h100n[1-2]", "h100", str(dev), links=links)
    gres += gres_conf_lines(a100, "a100n1", "a100", str(dev), links=links)
    (tmp_path / "gres.conf").write_text("\n".join(gres) + "\n")
    expect = {"h100n2": ("h100", 8, ["0-15"] * 4 + ["16-31"] * 4), "a100n1": ("a100", 4, ["16-31"] * 2 + ["0-15"] * 2)}
    for node, (gtype, count, cores) in expect.items():
        out = subprocess.run(
            ["slurmd", "-D", "-G", "-N", node, "-f", str(tmp_path / "slurm.conf")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        text = out.stdout + out.stderr
        assert out.returncode == 0, text
        # 26.05.5's slurmd (cgroup/v1) also resets its memory limit, which a CI root's read-only cgroup mount
        # refuses ("unable to open .../memory.limit_in_bytes for writing: Read-only file system", "Cannot reset
        # slurmd memory limits"): the machine's, not the GRES configuration's, errors
        errors = [ln for ln in text.lower().splitlines() if "error" in ln and not (
            "read-only file system" in ln or "cannot reset slurmd memory limits" in ln)]
        assert not errors, text
        gres_lines = [ln for ln in text.splitlines() if "Gres Name=gpu" in ln]
        assert sum(int(ln.split("Count=")[1].split()[0]) for ln in gres_lines) == count, text
        assert all(f"Type={gtype}" in ln for ln in gres_lines)
        got_cores = [ln.split("Cores=")[1].split()[0] for ln in gres_lines]
        counts = [int(ln.split("Count=")[1].split()[0]) for ln in gres_lines]
        assert [c for c, n in zip(got_cores, counts, strict=True) for _ in range(n)] == cores
        if links:
            assert all("Links=" in ln for ln in gres_lines), text


@pytest.mark.skipif(shutil.which("slurmd") is None, reason="needs the slurmd binary (Debian package slurmd)")
def test_real_slurmd_reads_generated_fake_gpus_conf(a100, tmp_path):
    """slurmd's own fake-GPU autodetection (fake_gpus.conf beside slurm.conf) yields our gres.conf."""
    dev = tmp_path / "dev"
    dev.mkdir()
    (tmp_path / "spool").mkdir()
    for i in range(4):
        (dev / f"nvidia{i}").symlink_to(f"/dev/tty{i + 1}")
    node = node_conf_line(a100, "a100n1", "a100", NodeHostname="localhost", Port=17903)
    (tmp_path / "slurm.conf").write_text(SLURM_CONF.format(d=tmp_path, nodes=node))
    (tmp_path / "gres.conf").write_text("AutoDetect=nvml\n")
    (tmp_path / "fake_gpus.conf").write_text(fake_gpus_conf(a100, "a100", str(dev)))
    out = subprocess.run(
        ["slurmd", "-D", "-G", "-N", "a100n1", "-f", str(tmp_path / "slurm.conf")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    text = out.stdout + out.stderr
    # 22.05/24.11 log "_get_system_gpu_list_fake"; 26.05.5 does not (measured). The File= paths below are only in
    # fake_gpus.conf, so they show slurmd's fake detection read it, on every release.
    assert out.returncode == 0, text
    got = [
        (ln.split("File=")[1].split()[0], ln.split("Cores=")[1].split()[0], ln.split("Links=")[1].split()[0])
        for ln in text.splitlines()
        if "Gres Name=gpu" in ln
    ]
    assert got == [
        (f"{dev}/nvidia0", "16-31", "-1,4,4,4"),
        (f"{dev}/nvidia1", "16-31", "4,-1,4,4"),
        (f"{dev}/nvidia2", "0-15", "4,4,-1,4"),
        (f"{dev}/nvidia3", "0-15", "4,4,4,-1"),
    ]
