# SPDX-License-Identifier: Apache-2.0
"""Edge cases with no saved capture, written by hand from the published facts in the research notes
(SYNTHETIC inputs, labelled as such): a GH200-style node with CPU-less NUMA nodes and a non-N/A
`GPU NUMA ID`, lscpu -p input, ANSI colour, the pre-2018 SOC spelling and a CPU Affinity-only table."""

from __future__ import annotations

from slurm_gpu.topology.draw import render, summary_json
from slurm_gpu.topology.lscpu import parse_lscpu
from slurm_gpu.topology.nvidia_smi import parse_topo_matrix, topology_from_nvidia_smi
from slurm_gpu.topology.slurmconf import gres_conf_lines, node_conf_line

# GH200 facts (notes section 5): lscpu shows 9 NUMA nodes, CPUs 0-71 only on node 0; the rest are
# GPU-memory nodes. SYNTHETIC text in the real formats.
GH200_LSCPU = "\n".join(
    [
        "Architecture: aarch64",
        "CPU(s): 72",
        "On-line CPU(s) list: 0-71",
        "Thread(s) per core: 1",
        "Core(s) per socket: 72",
        "Socket(s): 1",
        "NUMA node(s): 9",
        "NUMA node0 CPU(s): 0-71",
    ]
    + [f"NUMA node{i} CPU(s):" for i in range(1, 9)]
)
GH200_SMI = "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-71\t0\t\t1\n"


def test_grace_cpu_less_numa_nodes():
    topo = topology_from_nvidia_smi(GH200_SMI, parse_lscpu(GH200_LSCPU))
    assert [n.id for n in topo.numa_nodes] == list(range(9))
    assert all(n.cpus == () for n in topo.numa_nodes[1:])
    assert topo.gpus[0].numa_node == 0 and topo.gpu_cores(0) == tuple(range(72))
    assert gres_conf_lines(topo, "gh1", "gh200") == ["NodeName=gh1 Name=gpu Type=gh200 File=/dev/nvidia0 Cores=0-71"]
    assert node_conf_line(topo, "gh1", "gh200").startswith("NodeName=gh1 Sockets=1 CoresPerSocket=72 ThreadsPerCore=1")
    text = render(topo)
    assert "NUMA 1-8: memory only (no CPUs, no GPU placed)" in text.splitlines()
    assert max(map(len, text.splitlines())) <= 80
    assert summary_json(topo)["numa_nodes"][1] == {"id": 1, "cpus": ""}


def test_gpu_numa_id_without_lscpu_adds_memory_node():
    topo = topology_from_nvidia_smi(GH200_SMI)
    assert [(n.id, n.cpus) for n in topo.numa_nodes] == [(0, tuple(range(72))), (1, ())]


def test_lscpu_parsable_with_smt_siblings():
    # 1 socket, 2 cores, 2 threads; siblings (0,2) and (1,3) as Linux x86 numbers them
    text = "# CPU,Core,Socket,Node,,L1d,L1i,L2,L3\n" + "".join(
        f"{cpu},{cpu % 2},0,0,,{cpu % 2},{cpu % 2},{cpu % 2},0\n" for cpu in range(4)
    )
    smi = "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-3\t0\n"
    topo = topology_from_nvidia_smi(smi, parse_lscpu(text))
    assert (topo.sockets, topo.cores_per_socket, topo.threads_per_core) == (1, 2, 2)
    assert topo.core_cpus(0) == (0, 2) and topo.core_cpus(1) == (1, 3)
    assert topo.gpu_cores(0) == (0, 1)


def test_ansi_colour_and_soc_spelling():
    # driver <= 384 (DGX-1 era): SOC instead of SYS, CPU Affinity only
    text = "\x1b[1m\tGPU0\tGPU1\tCPU Affinity\x1b[0m\nGPU0\t X \tSOC\t0-9\nGPU1\tSOC\t X \t10-19\n"
    table = parse_topo_matrix(text)
    assert table.links[0].kind == "SYS"
    topo = topology_from_nvidia_smi(text)
    assert [g.numa_node for g in topo.gpus] == [None, None]
    assert topo.gpu_cores(1) == tuple(range(10, 20))


def test_mig_and_names_from_descriptor_defaults():
    topo = topology_from_nvidia_smi(GH200_SMI, gpu_defaults={"name": "NVIDIA GH200 480GB", "mig_capable": True})
    assert topo.gpus[0].name == "NVIDIA GH200 480GB" and topo.gpus[0].mig_capable
