# SPDX-License-Identifier: Apache-2.0
"""topology.conf / topology.yaml from the policy's fabric, per release (the real slurmctld reading them:
tests/lab/test_topology_lab.py), and `slurm-gpu admin emit --what topology`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from slurm_gpu.emit import topology as T
from slurm_gpu.policy import load_policy
from slurm_gpu.policy.model import Block, Fabric
from slurm_gpu.slurm.release import TOPOLOGY, since
from slurm_gpu.slurm.topology_show import parse_show_topology

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "examples" / "policies" / "fabric-lab.yaml"
FAB = load_policy(str(LAB)).fabric


def test_tree_lines() -> None:
    assert T.tree_lines(FAB) == ["SwitchName=leaf1 Nodes=a100n[1-2]", "SwitchName=leaf2 Nodes=a100n[3-4]",
                                 "SwitchName=spine Switches=leaf1,leaf2"]


def test_block_lines_and_default_sizes() -> None:
    assert T.block_lines(FAB) == ["BlockName=nvl1 Nodes=a100n[1-2]", "BlockName=nvl2 Nodes=a100n[3-4]",
                                  "BlockSizes=2,4"]
    racks = Fabric(blocks=tuple(Block(f"rack{i}", tuple(f"gb{i}n{j:02d}" for j in range(18))) for i in range(5)))
    assert T.block_sizes(racks) == (18, 36, 72)  # doublings up to all 5 racks (90 nodes)


@pytest.mark.parametrize("version,name,plugin", [((22, 5, 8), "topology.conf", "tree"),
                                                 ((24, 11, 5), "topology.conf", "block"),
                                                 ((26, 5, 5), "topology.yaml", "block")])
def test_each_release_gets_the_file_it_reads(version: tuple[int, int, int], name: str, plugin: str) -> None:
    facts = since(TOPOLOGY, version)
    files = T.topology_files(FAB, facts, plugin)
    assert list(files) == [name]
    if name == "topology.yaml":
        doc = yaml.safe_load(files[name])
        assert [t["topology"] for t in doc] == ["tree", "block"]
        assert [t["cluster_default"] for t in doc] == [False, True]
        assert doc[0]["tree"]["switches"][2] == {"switch": "spine", "children": "leaf1,leaf2"}
        assert doc[1]["block"] == {"block_sizes": [2, 4], "blocks": [{"block": "nvl1", "nodes": "a100n[1-2]"},
                                                                      {"block": "nvl2", "nodes": "a100n[3-4]"}]}
        assert T.slurm_conf_lines(plugin, facts) == []
    else:
        assert T.slurm_conf_lines(plugin, facts) == [f"TopologyPlugin=topology/{plugin}"]


def test_a_release_without_the_plugin_is_refused() -> None:
    with pytest.raises(ValueError, match="no topology/block"):
        T.choose_plugin(FAB, since(TOPOLOGY, (22, 5, 8)), "block")


def _emit(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", "admin", "emit", str(LAB), "--what",
                           "topology", *argv], capture_output=True, text=True, timeout=60, check=False)


def test_admin_emit_topology() -> None:
    out = _emit("--slurm-version", "22.05")
    assert out.returncode == 0, out.stderr
    assert "# slurm.conf: TopologyPlugin=topology/tree" in out.stdout
    assert "SwitchName=leaf1 Nodes=a100n[1-2]" in out.stdout
    bad = _emit("--slurm-version", "22.05", "--plugin", "block")
    assert bad.returncode == 1 and "has no topology/block" in bad.stderr and "Traceback" not in bad.stderr
    usage = _emit("--slurm-version", "x")
    assert usage.returncode == 2 and "Traceback" not in usage.stderr


def test_scontrol_show_topology_reads_back() -> None:
    # 22.05.8's output for the lab fabric (measured)
    text = ("SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=a100n[1-2]\n"
            "SwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=a100n[3-4]\n"
            "SwitchName=spine Level=1 LinkSpeed=1 Nodes=a100n[1-4] Switches=leaf1,leaf2\n")
    units = parse_show_topology(text)
    assert [(u.name, u.level, u.nodes) for u in units[:2]] == [("leaf1", 0, ("a100n1", "a100n2")),
                                                               ("leaf2", 0, ("a100n3", "a100n4"))]
    assert units[2].switches == ("leaf1", "leaf2") and len(units[2].nodes) == 4


def test_scontrol_show_topology_reads_blocks() -> None:
    # 24.11.5's output for the lab fabric with topology/block (measured)
    text = ("BlockName=nvl1 BlockIndex=0 Nodes=a100n[1-2] BlockSize=2\n"
            "BlockName=nvl2 BlockIndex=1 Nodes=a100n[3-4] BlockSize=2\n"
            "AggregatedBlock=nvl[1-2] BlockIndex=2 Nodes=a100n[1-4] BlockSize=4\n")
    units = parse_show_topology(text)
    assert [(u.kind, u.name, len(u.nodes)) for u in units] == [("block", "nvl1", 2), ("block", "nvl2", 2),
                                                              ("aggregate", "nvl[1-2]", 4)]
    assert dict(units[0].fields)["BlockSize"] == "2"
