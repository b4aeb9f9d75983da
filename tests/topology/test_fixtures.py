# SPDX-License-Identifier: Apache-2.0
"""Every real capture in data/ parsed; expected GPU -> NUMA -> CPU/core tables written by hand from the
hardware facts in each file's header line and the research notes (not produced by the code)."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_gpu.cpulist import parse_cpulist
from slurm_gpu.topology import load_topology_file
from slurm_gpu.topology.hwloc import topology_from_hwloc
from slurm_gpu.topology.lscpu import parse_lscpu
from slurm_gpu.topology.nvidia_smi import parse_topo_matrix, topology_from_nvidia_smi
from slurm_gpu.topology.slurmconf import gres_conf_lines, node_conf_line

DATA = Path(__file__).parent / "data"


def smi(name: str, lscpu: str | None = None):
    layout = parse_lscpu((DATA / lscpu).read_text()) if lscpu else None
    return topology_from_nvidia_smi((DATA / name).read_text(), layout, source=name)


def cpus(text: str) -> tuple[int, ...]:
    return parse_cpulist(text)


# DGX A100, 2x EPYC 7742 NPS4: NUMA k = cpus 16k..16k+15 and 128+16k..; abstract cores 16k..16k+15.
# GPU0,1 -> NUMA 3; GPU2,3 -> 1; GPU4,5 -> 7; GPU6,7 -> 5.
A100_NUMA = {0: 3, 1: 3, 2: 1, 3: 1, 4: 7, 5: 7, 6: 5, 7: 5}


def a100_expect(numa: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    lo = 16 * numa
    return cpus(f"{lo}-{lo + 15},{128 + lo}-{128 + lo + 15}"), tuple(range(lo, lo + 16))


@pytest.mark.parametrize("with_lscpu", [True, False], ids=["lscpu", "topo-only"])
def test_dgx_a100_nps4(with_lscpu):
    topo = smi("dgx-a100-epyc7742-nps4.nvidia-smi-topo.txt", "dgx-a100-epyc7742.lscpu.txt" if with_lscpu else None)
    assert len(topo.gpus) == 8
    for g in topo.gpus:
        want_cpus, want_cores = a100_expect(A100_NUMA[g.index])
        assert g.numa_node == A100_NUMA[g.index]
        assert g.cpus == want_cpus
        assert topo.gpu_cores(g.index) == want_cores
    assert gres_conf_lines(topo, "dgx[01-04]", "a100") == [
        "NodeName=dgx[01-04] Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=48-63",
        "NodeName=dgx[01-04] Name=gpu Type=a100 File=/dev/nvidia[2-3] Cores=16-31",
        "NodeName=dgx[01-04] Name=gpu Type=a100 File=/dev/nvidia[4-5] Cores=112-127",
        "NodeName=dgx[01-04] Name=gpu Type=a100 File=/dev/nvidia[6-7] Cores=80-95",
    ]
    assert topo.link("GPU0", "GPU7") == "NV12"
    assert topo.link("GPU0", "NIC0") == "PXB" and topo.link("GPU0", "NIC2") == "SYS"
    names = [n.name for n in topo.nics]
    assert names == [f"mlx5_{i}" for i in range(10)]
    # NIC locality from their PXB GPUs; the storage pair (NIC8/9) is SYS to every GPU -> unknown
    assert [n.numa_node for n in topo.nics] == [3, 3, 1, 1, 7, 7, 5, 5, None, None]
    if with_lscpu:
        assert node_conf_line(topo, "dgx01", "a100") == (
            "NodeName=dgx01 Sockets=2 CoresPerSocket=64 ThreadsPerCore=2 Gres=gpu:a100:8"
        )
        assert [n.id for n in topo.numa_nodes] == list(range(8))
        assert topo.core_cpus(48) == (48, 176)
        assert topo.core_socket(63) == 0 and topo.core_socket(64) == 1


@pytest.mark.parametrize("name", ["hgx-h200-8gpu.nvidia-smi-topo.txt", "pcie-8x-rtx4090-2socket.nvidia-smi-topo.txt"])
def test_two_socket_56c_ht(name):
    # Both: 2 sockets x 56 cores + HT; NUMA0 = 0-55,112-167 (GPU0-3), NUMA1 = 56-111,168-223 (GPU4-7).
    topo = smi(name)
    assert (topo.sockets, topo.cores_per_socket, topo.threads_per_core) == (2, 56, 2)
    for g in topo.gpus:
        node = 0 if g.index < 4 else 1
        assert g.numa_node == node
        assert g.cpus == (cpus("0-55,112-167") if node == 0 else cpus("56-111,168-223"))
        assert topo.gpu_cores(g.index) == (tuple(range(56)) if node == 0 else tuple(range(56, 112)))
    assert gres_conf_lines(topo, "n1", None) == [
        "NodeName=n1 Name=gpu File=/dev/nvidia[0-3] Cores=0-55",
        "NodeName=n1 Name=gpu File=/dev/nvidia[4-7] Cores=56-111",
    ]


def test_h200_links_and_nics():
    topo = smi("hgx-h200-8gpu.nvidia-smi-topo.txt")
    assert {topo.link(f"GPU{a}", f"GPU{b}") for a in range(8) for b in range(8) if a != b} == {"NV18"}
    # DGX H100/H200 user guide table: GPU0<->mlx5_0, GPU1<->mlx5_3, GPU5<->mlx5_9, GPU7<->mlx5_11 (PXB)
    for gpu, nic in ((0, 0), (1, 3), (2, 4), (3, 5), (4, 6), (5, 9), (6, 10), (7, 11)):
        assert topo.link(f"GPU{gpu}", f"NIC{nic}") == "PXB"
        assert topo.nics[nic].name == f"mlx5_{nic}"
    assert topo.link("NIC1", "NIC2") == "PIX"
    assert [n.numa_node for n in topo.nics] == [0] * 6 + [1] * 6


def test_4090_all_sys_even_inside_numa():
    topo = smi("pcie-8x-rtx4090-2socket.nvidia-smi-topo.txt")
    assert topo.link("GPU0", "GPU1") == "SYS"
    assert topo.link("GPU6", "NIC0") == "PHB" and topo.link("NIC0", "NIC1") == "PIX"
    assert topo.nics[0].numa_node == 1 and topo.nics[0].name == "NIC0"  # no NIC legend in this capture


def test_p4_vm_numa_na():
    topo = smi("single-tesla-p4-no-numa.nvidia-smi-topo.txt")
    (g,) = topo.gpus
    assert g.numa_node is None and g.cpus == tuple(range(8))
    assert topo.gpu_cores(0) == tuple(range(8))
    assert gres_conf_lines(topo, "vm1", "p4") == ["NodeName=vm1 Name=gpu Type=p4 File=/dev/nvidia0 Cores=0-7"]


def test_5090_threadripper_single_numa():
    topo = smi("workstation-2x-rtx5090-threadripper.nvidia-smi-topo.txt")
    assert [g.numa_node for g in topo.gpus] == [0, 0]
    assert topo.gpus[0].cpus == tuple(range(64))
    assert topo.link("GPU0", "GPU1") == "PHB"


def test_5gpu_workstation_space_separated():
    topo = smi("workstation-5gpu-2numa.nvidia-smi-topo.txt")
    # GPU0 alone on NUMA 1 (8-15,24-31); GPU1-4 on NUMA 0 (0-7,16-23): 16 cores x 2 threads.
    assert [g.numa_node for g in topo.gpus] == [1, 0, 0, 0, 0]
    assert topo.gpus[0].cpus == cpus("8-15,24-31")
    assert topo.gpu_cores(0) == tuple(range(8, 16))
    assert all(topo.gpu_cores(i) == tuple(range(8)) for i in range(1, 5))
    assert topo.link("GPU1", "GPU2") == "PHB" and topo.link("GPU1", "GPU3") == "NODE"
    assert gres_conf_lines(topo, "ws", "rtx") == [
        "NodeName=ws Name=gpu Type=rtx File=/dev/nvidia0 Cores=8-15",
        "NodeName=ws Name=gpu Type=rtx File=/dev/nvidia[1-4] Cores=0-7",
    ]


def test_polaris_markdown_reverse_numa_order():
    topo = smi("polaris-4xA100-epyc7543p-nps4.topo-table.md")
    # GPU0 -> NUMA 3 (24-31,56-63) ... GPU3 -> NUMA 0 (0-7,32-39); NV4 between all GPUs.
    expect = {0: (3, "24-31,56-63"), 1: (2, "16-23,48-55"), 2: (1, "8-15,40-47"), 3: (0, "0-7,32-39")}
    for i, (node, text) in expect.items():
        assert topo.gpu(i).numa_node == node and topo.gpu(i).cpus == cpus(text)
        lo = 8 * node
        assert topo.gpu_cores(i) == tuple(range(lo, lo + 8))
    assert topo.link("GPU0", "GPU3") == "NV4"
    assert topo.link("GPU3", "NIC0") == "PHB" and topo.nics[0].name == "mlx5_0"
    assert topo.link("GPU1", "NIC1") == "PHB"  # the missing mlx5_1 row is rebuilt from its column


def test_dgx2h_hwloc_16_gpus_with_numa():
    topo = load_topology_file(DATA / "nvidia-dgx2h-16xV100-nvswitch.hwloc.xml")
    assert len(topo.gpus) == 16
    # GPUs 0-7 under Package 0 / NUMA 0, 8-15 under Package 1 / NUMA 1 (file trimmed to 2 PUs/socket)
    assert [g.numa_node for g in topo.gpus] == [0] * 8 + [1] * 8
    assert all(g.name == "Tesla V100-SXM3-32GB-H" for g in topo.gpus)
    assert topo.gpus[0].pci_bus_id == "0000:34:00.0"
    assert topo.gpus[0].uuid == "GPU-d3977428-7a30-086b-2e20-5c1eeed647c6"
    assert topo.gpus[0].cpus == (0, 1) and topo.gpus[15].cpus == (24, 25)
    assert topo.gpu_cores(0) == (0, 1) and topo.gpu_cores(15) == (2, 3)
    # every NVLink ends at an NVSwitch: real AutoDetect=nvml reports 0 for every pair
    lines = gres_conf_lines(topo, "dgx2", "v100", links=True)
    assert lines[0] == "NodeName=dgx2 Name=gpu Type=v100 File=/dev/nvidia0 Cores=0-1 Links=-1" + ",0" * 15
    assert topo.link("GPU0", "GPU15") == "NV6"  # DGX-2: 6 NVLinks per V100, all to NVSwitches


def test_power8_minsky_hwloc_direct_nvlink():
    topo = topology_from_hwloc((DATA / "ibm-power8-minsky-4xP100.hwloc.xml").read_text())
    # 2 packages/NUMA nodes; GPUs 0,1 (domains 0002/0003) on package 0, 2,3 (000a/000b) on package 1
    assert [g.numa_node for g in topo.gpus] == [0, 0, 1, 1]
    assert [g.pci_bus_id for g in topo.gpus] == ["0002:01:00.0", "0003:01:00.0", "000a:01:00.0", "000b:01:00.0"]
    # P100 pairs have 2 direct NVLinks (40000 MB/s at 20000 per NVLink 1.0 link); across packages none
    assert topo.link("GPU0", "GPU1") == "NV2" and topo.link("GPU2", "GPU3") == "NV2"
    assert topo.link("GPU0", "GPU2") == "SYS"
    assert gres_conf_lines(topo, "m", "p100", links=True)[0].endswith("Links=-1,2,0,0")


def test_supermicro_hwloc_locality():
    topo = topology_from_hwloc((DATA / "supermicro-x9drg-2xE5-2650-3xTesla.hwloc.xml").read_text())
    # 03:00.0 under Package 0 (cpus 0-7,16-23), 83:00.0 and 84:00.0 under Package 1 (8-15,24-31)
    assert [(g.pci_bus_id, g.numa_node) for g in topo.gpus] == [
        ("0000:03:00.0", 0),
        ("0000:83:00.0", 1),
        ("0000:84:00.0", 1),
    ]
    assert topo.gpus[0].cpus == cpus("0-7,16-23")
    assert (topo.sockets, topo.cores_per_socket, topo.threads_per_core) == (2, 8, 2)
    assert topo.gpu_cores(0) == tuple(range(8)) and topo.gpu_cores(2) == tuple(range(8, 16))


def test_lscpu_plain_dgx_a100():
    layout = parse_lscpu((DATA / "dgx-a100-epyc7742.lscpu.txt").read_text())
    assert len(layout.threads) == 256 and len(layout.numa_nodes) == 8
    assert layout.numa_nodes[3].cpus == cpus("48-63,176-191")
    assert layout.numa_nodes[3].socket == 0 and layout.numa_nodes[4].socket == 1


def test_nic_legend_and_columns():
    table = parse_topo_matrix((DATA / "dgx-a100-epyc7742-nps4.nvidia-smi-topo.txt").read_text())
    assert table.devices[:8] == tuple(f"GPU{i}" for i in range(8))
    assert table.nic_names["NIC9"] == "mlx5_9"


def test_h200_vm_driver580_ansi_header():
    # real capture (driver 580 underlines the header with ANSI escapes); 1 socket x 16 cores, 1 NUMA node
    topo = smi("h200-1gpu-vm-driver580.nvidia-smi-topo.txt", "h200-1gpu-vm.lscpu-p.txt")
    assert (topo.sockets, topo.cores_per_socket, topo.threads_per_core) == (1, 16, 1)
    (g,) = topo.gpus
    assert g.numa_node == 0 and g.cpus == tuple(range(16)) and topo.gpu_cores(0) == tuple(range(16))
    assert gres_conf_lines(topo, "h200vm", "h200") == [
        "NodeName=h200vm Name=gpu Type=h200 File=/dev/nvidia0 Cores=0-15"
    ]
