# SPDX-License-Identifier: Apache-2.0
"""The fabric from captures: ibnetdiscover's text (a 2-leaf, 2-spine fat tree as infiniband-diags prints
it) and NVML GPU fabric records (a GB200 NVL72-like layout, 2 racks x 18 trays) -> the policy's fabric
section, which the policy loader takes as it is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_gpu.errors import TopologyError
from slurm_gpu.topology.fabric import blocks_from_fabric_info, fabric_section, parse_ibnetdiscover

HERE = Path(__file__).resolve().parent / "fixtures" / "fabric"
ROOT = Path(__file__).resolve().parents[2]
IB = (HERE / "ibnetdiscover-2leaf.txt").read_text()
NVL = json.loads((HERE / "nvml-fabric-gb200-2rack.json").read_text())["nodes"]


def test_ibnetdiscover_gives_leaves_and_spines() -> None:
    units = parse_ibnetdiscover(IB)
    assert [(u.name, u.nodes) for u in units[:2]] == [
        ("sw-leaf01", ("gpu001", "gpu002", "gpu003", "gpu004")),
        ("sw-leaf02", ("gpu005", "gpu006", "gpu007", "gpu008"))]  # gpu008 by mlx5_0, not its 2nd rail
    assert [(u.name, u.switches) for u in units[2:]] == [("sw-spine01", ("sw-leaf01", "sw-leaf02")),
                                                         ("sw-spine02", ("sw-leaf01", "sw-leaf02"))]


def test_the_second_rail_places_hosts_by_its_hca() -> None:
    leaves = [u for u in parse_ibnetdiscover(IB, hca="mlx5_1") if u.nodes]
    assert [(u.name, u.nodes) for u in leaves] == [("sw-leaf01", ("gpu008",))]


def test_ibnetdiscover_without_hosts_is_refused() -> None:
    with pytest.raises(TopologyError, match="no switch with a host"):
        parse_ibnetdiscover("\n".join(line for line in IB.splitlines() if '"H-' not in line))


def test_nvml_fabric_info_gives_one_block_per_rack() -> None:
    blocks, warnings = blocks_from_fabric_info(NVL)
    assert [(b.name, len(b.nodes), b.clique_id) for b in blocks] == [("nvl-6f1c2b7e-32766", 18, 32766),
                                                                    ("nvl-b2a94d10-32766", 18, 32766)]
    assert blocks[1].nodes[-1] == "gb200-r2n18"  # one GPU still registering: the node keeps its other three
    assert warnings == ("gb200-r2n18: GPU 3 fabric state 2 (not completed): not counted",)


def test_a_node_in_two_domains_is_refused() -> None:
    bad = [dict(NVL[0], gpus=[*NVL[0]["gpus"][:3], dict(NVL[0]["gpus"][3], clique_id=7)])]
    with pytest.raises(TopologyError, match="in 2 NVLink domains"):
        blocks_from_fabric_info(bad)


def test_the_section_loads_as_a_policy(tmp_path: Path) -> None:
    from slurm_gpu.policy import load_policy

    blocks, _ = blocks_from_fabric_info(NVL)
    nodes = ",".join(n for b in blocks for n in b.nodes)
    from slurm_gpu.hostlist import compress_hostlist

    text = (f"version: 1\nname: gb200\ngpu_types:\n  - {{name: gb200, memory_gb: 186}}\nnode_types:\n"
            f"  - {{name: gb200x4, topology: none.yaml, gpu_type: gb200, gpus: 4, "
            f"nodes: \"{compress_hostlist(nodes.split(','))}\"}}\n" + fabric_section((), blocks, "block"))
    (tmp_path / "p.yaml").write_text(text)
    fab = load_policy(str(tmp_path / "p.yaml")).fabric
    assert [len(b.nodes) for b in fab.blocks] == [18, 18] and fab.plugin == "block"


def test_admin_fabric_cli() -> None:
    out = subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", "admin", "fabric", "--ibnetdiscover",
                          str(HERE / "ibnetdiscover-2leaf.txt"),
                          "--nvml-fabric", str(HERE / "nvml-fabric-gb200-2rack.json")],
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert 'nodes: "gpu[001-004]"' in out.stdout and 'nodes: "gb200-r1n[01-18]"' in out.stdout
    assert "not completed" in out.stderr
