# SPDX-License-Identifier: Apache-2.0
"""Issue 8, topology from real captures: Grace nodes (NUMA Affinity lists, GPU NUMA ID), web-page
pastes (colour codes without the ESC byte, prompt lines, indentation, trailing legend), NIC columns
named by device (mlx5_bond_N), sockets derived from disjoint affinity sets without lscpu, and an lscpu
from another machine refused. Expected values are written by hand from each fixture's first line."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from slurm_gpu.cli.main import cli
from slurm_gpu.errors import TopologyError
from slurm_gpu.topology.lscpu import parse_lscpu
from slurm_gpu.topology.nvidia_smi import parse_topo_matrix, topology_from_nvidia_smi
from slurm_gpu.topology.slurmconf import gres_conf_lines, node_conf_line

DATA = Path(__file__).parent / "data"
GB200 = DATA / "gb200-4gpu-2grace.nvidia-smi-topo.txt"
GB200_LSCPU = DATA / "gb200-4gpu-2grace.lscpu.txt"
GH200X4 = DATA / "gh200x4-grace-hopper.nvidia-smi-topo.txt"
WEB = DATA / "hgx-h200-8gpu.web-paste.nvidia-smi-topo.txt"
BOND = DATA / "pcie-8x-rtx4090-bond-nics.nvidia-smi-topo.txt"
A100 = DATA / "dgx-a100-epyc7742-nps4.nvidia-smi-topo.txt"
A100_LSCPU = DATA / "dgx-a100-epyc7742.lscpu.txt"


def smi(path: Path, lscpu: Path | None = None):
    layout = parse_lscpu(lscpu.read_text(), source=lscpu.name) if lscpu else None
    return topology_from_nvidia_smi(path.read_text(), layout, source=path.name)


def run(*args: str):
    return CliRunner().invoke(cli, ["topo", *args])


# --- Grace --------------------------------------------------------------------------------------


@pytest.mark.parametrize("with_lscpu", [True, False], ids=["lscpu", "topo-only"])
def test_gb200_numa_affinity_lists(with_lscpu):
    topo = smi(GB200, GB200_LSCPU if with_lscpu else None)
    # GPUs 0,1 on Grace 0 (NUMA 0, cpus 0-71); GPUs 2,3 on Grace 1 (NUMA 1, cpus 72-143)
    assert [g.numa_node for g in topo.gpus] == [0, 0, 1, 1]
    assert [topo.gpu_cores(i) for i in range(4)] == [tuple(range(72))] * 2 + [tuple(range(72, 144))] * 2
    assert [topo.gpu_socket(i) for i in range(4)] == [0, 0, 1, 1]
    assert (topo.sockets, topo.cores_per_socket, topo.threads_per_core) == (2, 72, 1)
    assert gres_conf_lines(topo, "gb[01-18]", "gb200") == [
        "NodeName=gb[01-18] Name=gpu Type=gb200 File=/dev/nvidia[0-1] Cores=0-71",
        "NodeName=gb[01-18] Name=gpu Type=gb200 File=/dev/nvidia[2-3] Cores=72-143",
    ]
    ids = [n.id for n in topo.numa_nodes]
    if with_lscpu:  # lscpu lists all 34 nodes; only 0 and 1 have CPUs
        assert ids == list(range(34))
        assert topo.socket_assumption is None
    else:  # the capture names 0, 1, the listed GPU-memory nodes and the GPU NUMA IDs
        assert ids == [0, 1, 2, *range(3, 10), 10, *range(11, 18), 18, *range(19, 26), 26, *range(27, 34)]
        assert "2 socket(s) derived from the disjoint GPU CPU-affinity sets (0-71 | 72-143)" in topo.socket_assumption
    assert [n.id for n in topo.numa_nodes if n.cpus] == [0, 1]
    assert [n.name for n in topo.nics] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert [n.numa_node for n in topo.nics] == [0, 0, 1, 1]


def test_gb200_table_keeps_the_whole_numa_list():
    table = parse_topo_matrix(GB200.read_text())
    assert table.gpus[0].numa_nodes == (0, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17)
    assert table.gpus[0].gpu_numa_id == 2 and table.gpus[3].gpu_numa_id == 26
    assert table.gpus[2].numa_node == 1


def test_gh200x4_one_socket_per_superchip():
    topo = smi(GH200X4)
    assert (topo.sockets, topo.cores_per_socket, topo.threads_per_core) == (4, 72, 1)
    for i in range(4):
        assert topo.gpus[i].numa_node == i
        assert topo.gpu_cores(i) == tuple(range(72 * i, 72 * i + 72))
        assert topo.gpu_socket(i) == i
    assert [n.id for n in topo.numa_nodes if not n.cpus] == [4, 12, 20, 28]
    assert node_conf_line(topo, "gh1", "gh200") == (
        "NodeName=gh1 Sockets=4 CoresPerSocket=72 ThreadsPerCore=1 Gres=gpu:gh200:4"
    )


# --- pastes -------------------------------------------------------------------------------------


def test_web_paste_equals_the_real_capture():
    # colour codes without ESC, root prompt before and after, indentation, no blank line before
    # the Legend: the same node as the tab-separated original
    web = smi(WEB)
    real = smi(DATA / "hgx-h200-8gpu.nvidia-smi-topo.txt")
    assert web == real
    assert [g.numa_node for g in web.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert web.gpu_cores(0) == tuple(range(56)) and web.gpu_cores(7) == tuple(range(56, 112))
    assert [n.name for n in web.nics] == [f"mlx5_{i}" for i in range(12)]


def test_bond_nic_columns_and_prompt():
    topo = smi(BOND)
    assert [n.name for n in topo.nics] == ["mlx5_bond_0", "mlx5_bond_1"]
    assert topo.link("GPU6", "NIC0") == "PHB" and topo.link("NIC0", "NIC1") == "PIX"
    assert topo.nics[0].numa_node == 1  # PHB to GPU6 only, which is on NUMA 1
    assert topo.gpu_cores(0) == tuple(range(56))


@pytest.mark.parametrize(
    "text",
    [
        "$ nvidia-smi topo -m\n\t[4mGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID[0m\n"
        "GPU0\t X \tNV4\t0-7\t0\t\tN/A\nGPU1\tNV4\t X \t8-15\t1\t\tN/A\n",
        "root@dgx:~# nvidia-smi topo -m\n    GPU0    GPU1    CPU Affinity    NUMA Affinity\n"
        "    GPU0     X      NV4    0-7     0\n    GPU1    NV4      X     8-15    1\n"
        "Legend:\n  X    = Self\n  NV#  = Connection traversing a bonded set of # NVLinks\nroot@dgx:~#\n",
        "The node has GPU0 and GPU1:\n\n        GPU0    GPU1    CPU Affinity    NUMA Affinity\n\n"
        "GPU0     X      NV4    0-7     0\n\nGPU1    NV4      X     8-15    1\n\nsome closing words\n",
    ],
    ids=["escless-colour", "prompt-indent-legend", "sentence-and-blank-lines"],
)
def test_pastes(text):
    topo = topology_from_nvidia_smi(text)
    assert [g.numa_node for g in topo.gpus] == [0, 1]
    assert topo.gpu_cores(0) == tuple(range(8)) and topo.gpu_cores(1) == tuple(range(8, 16))
    assert topo.sockets == 2 and topo.link("GPU0", "GPU1") == "NV4"


def test_na_cells_everywhere():
    text = ("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
            "GPU0\t X \tPHB\t0-15\tN/A\t\tN/A\nGPU1\tPHB\t X \tN/A\tN/A\t\tN/A\n")
    topo = topology_from_nvidia_smi(text)
    assert topo.gpus[0].cpus == tuple(range(16)) and topo.gpus[1].cpus is None
    assert topo.gpus[0].numa_node is None and topo.gpu_cores(1) == ()


# --- sockets without lscpu ------------------------------------------------------------------------


def test_sockets_from_disjoint_sets_uneven():
    # 3 GPUs: two share 0-9, one has 10-39 -> 2 disjoint sets; an even 20/20 split would cut the
    # second set, so cores go by set: socket 0 = cores 0-9, socket 1 = cores 10-39
    text = (
        "\tGPU0\tGPU1\tGPU2\tCPU Affinity\nGPU0\t X \tPIX\tSYS\t0-9\nGPU1\tPIX\t X \tSYS\t0-9\n"
        "GPU2\tSYS\tSYS\t X \t10-39\n"
    )
    topo = topology_from_nvidia_smi(text)
    assert topo.sockets == 2 and topo.socket_cores(0) == tuple(range(10)) and topo.socket_cores(1) == tuple(
        range(10, 40)
    )
    assert "(by set)" in topo.socket_assumption


def test_sockets_from_overlapping_sets_merge():
    # old drivers print socket-wide affinity that overlaps: 0-15 and 8-23 are one set -> 1 socket
    text = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tSYS\t0-15\nGPU1\tSYS\t X \t8-23\n"
    topo = topology_from_nvidia_smi(text)
    assert topo.sockets == 1 and topo.cores_per_socket == 24


def test_cli_prints_the_socket_assumption_once_on_stderr():
    out = run("gres-conf", "--from-nvidia-smi", str(DATA / "hgx-h200-8gpu.nvidia-smi-topo.txt"))
    assert out.exit_code == 0
    assert out.stderr.splitlines() == [
        "note: no lscpu given: 2 socket(s) derived from the disjoint GPU CPU-affinity sets "
        "(0-55,112-167 | 56-111,168-223), 56 cores each (even split), cpus 0-223, 2 threads per core; "
        "pass --lscpu for exact sockets and cores"
    ]
    assert out.stdout.splitlines() == [
        "NodeName=localhost Name=gpu File=/dev/nvidia[0-3] Cores=0-55",
        "NodeName=localhost Name=gpu File=/dev/nvidia[4-7] Cores=56-111",
    ]
    out = run("gres-conf", "--from-nvidia-smi", str(A100), "--lscpu", str(A100_LSCPU))
    assert out.exit_code == 0 and out.stderr == ""


# --- lscpu from another machine -------------------------------------------------------------------


def test_lscpu_of_another_machine_is_refused_naming_both():
    with pytest.raises(TopologyError) as e:
        smi(GB200, A100_LSCPU)  # A100 lscpu has NUMA 0-7 only; GB200 GPUs name nodes up to 33
    msg = str(e.value)
    assert msg == (
        "gb200-4gpu-2grace.nvidia-smi-topo.txt:3: GPU0 NUMA Affinity 8 is not a NUMA node of this node "
        "(known: 0-7 in dgx-a100-epyc7742.lscpu.txt); the capture and the lscpu output are from different machines"
    )
    out = run("show", "--from-nvidia-smi", str(WEB), "--lscpu", str(GB200_LSCPU))
    assert out.exit_code == 2 and out.stdout == ""
    assert out.stderr.splitlines() == [
        f"Error: {WEB}:4: GPU0 CPU Affinity 0-55,112-167 is outside the node's cpus 0-143 ({GB200_LSCPU}); "
        "the capture and the lscpu output are from different machines"
    ]


def test_lscpu_numa_contradiction_is_refused():
    # same cpu count, but lscpu puts cpus 0-71 on node 1: the capture says GPU0 (0-71) is on node 0
    lscpu = "\n".join(
        ["CPU(s): 144", "On-line CPU(s) list: 0-143", "Thread(s) per core: 1", "Core(s) per socket: 72",
         "Socket(s): 2", "NUMA node0 CPU(s): 72-143", "NUMA node1 CPU(s): 0-71"]
    )
    text = "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-71\t0\n"
    with pytest.raises(TopologyError,
                       match=r"x.txt:2: GPU0 CPU Affinity 0-71 has no cpu of its NUMA node 0, which l.txt"):
        topology_from_nvidia_smi(text, parse_lscpu(lscpu, source="l.txt"), source="x.txt")
