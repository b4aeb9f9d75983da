# SPDX-License-Identifier: Apache-2.0
"""The policy's fabric section: loading, the cross checks `policy check` makes (file, line and field), and
the locality the classifier adds to multi-node jobs (--switches / --segment) within the site's bound."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from slurm_gpu.errors import PolicyError
from slurm_gpu.policy import classify, load_policy
from slurm_gpu.policy.load import check_policy
from slurm_gpu.request import JobRequest

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "examples" / "policies" / "fabric-lab.yaml"


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    text = LAB.read_text().replace("../topology/", f"{ROOT}/examples/topology/")
    assert old in text, old
    path = tmp_path / "fab.yaml"
    path.write_text(text.replace(old, new))
    return path


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_the_lab_fabric_loads() -> None:
    fab = load_policy(str(LAB)).fabric
    assert [s.name for s in fab.leaves()] == ["leaf1", "leaf2"]
    assert fab.leaf_of("a100n3") == "leaf2" and fab.block_of("a100n1") == "nvl1"
    assert fab.switches[2].switches == ("leaf1", "leaf2") and fab.switches[2].nodes == ()
    assert fab.plugin == "tree" and fab.blocks[1].hostlist == "a100n[3-4]"
    assert load_policy(str(ROOT / "examples" / "policies" / "university.yaml")).fabric.empty


@pytest.mark.parametrize("old,new,needle,field,found", [
    ("      nodes: a100n[3-4]\n    - name: spine", "      nodes: a100n[2-4]\n    - name: spine", "a100n[2-4]",
     "fabric.switches.leaf2.nodes", "node 'a100n2' already in leaf switch leaf1"),
    ("    - name: nvl2\n      nodes: a100n[3-4]", "    - name: nvl2\n      nodes: a100n[1,3-4]", "a100n[1,3-4]",
     "fabric.blocks.nvl2.nodes", "node 'a100n1' already in block nvl1"),
    ("    - name: nvl2\n      nodes: a100n[3-4]", "    - name: nvl2\n      nodes: a100n[3-5]", "a100n[3-5]",
     "fabric.blocks.nvl2.nodes", "node 'a100n5' which is in no node_types entry"),
    ("switches: [leaf1, leaf2]", "switches: [leaf1, leaf3]", "leaf3",
     "fabric.switches.spine.switches", "switch 'leaf3' which is not defined"),
    ('switches: "1@1:00"', 'switches: "one@1:00"', "one@1:00", "classes.multinode.switches", "'one@1:00'"),
    ("  plugin: tree", "  plugin: ring", "plugin: ring", "fabric.plugin", "'ring'"),
])
def test_bad_fabric_input_names_file_line_and_field(tmp_path: Path, old: str, new: str, needle: str, field: str,
                                                     found: str) -> None:
    path = _variant(tmp_path, old, new)
    with pytest.raises(PolicyError) as e:
        load_policy(str(path))
    line = _line_of(path, needle)
    assert re.search(rf"{re.escape(str(path))}:{line}:\d+: {re.escape(field)}: found {re.escape(found)}",
                     str(e.value)), str(e.value)


def test_a_cycle_of_switches_is_refused(tmp_path: Path) -> None:
    path = _variant(tmp_path, "    - name: leaf1\n      nodes: a100n[1-2]\n",
                    "    - name: leaf1\n      switches: [spine]\n    - name: leaf0\n      nodes: a100n[1-2]\n")
    with pytest.raises(PolicyError) as e:
        load_policy(str(path))
    assert "a cycle of switches" in str(e.value)


def test_nodes_in_no_block_are_flagged(tmp_path: Path) -> None:
    r = check_policy(str(_variant(tmp_path, "    - name: nvl2\n      nodes: a100n[3-4]",
                                  "    - name: nvl2\n      nodes: a100n3")))
    assert r.ok and any("nodes a100n4 are in no block" in w for w in r.warnings), r.warnings


# ---- locality: what the classifier adds -----------------------------------------------------------

def _added(policy_path: Path | str, **req: object) -> tuple[tuple[str, ...], str]:
    d = classify(JobRequest(gpus_per_node=4, gpu_type="a100", **req), load_policy(str(policy_path)))  # type: ignore[arg-type]
    assert d.accepted, d.message
    return tuple(o for o in d.added_options if o.startswith(("--switches", "--segment"))), \
        next((r for r in d.reasons if r.startswith("locality")), "")


def test_a_two_node_job_asks_for_one_switch_within_the_bound() -> None:
    opts, why = _added(LAB, nodes=2)
    assert opts == ("--switches=1@1:00",)
    assert "waits at most 00:01:00" in why and "then starts across switches" in why


@pytest.mark.parametrize("req,reason", [
    ({"nodes": 3}, "3 nodes exceed every leaf switch"),  # larger than any leaf: never confined
    ({"nodes": 2, "nodes_max": 3}, "Slurm chooses the node count"),
    ({"nodes": 2, "nodelist": ("a100n1", "a100n3")}, "-w names the nodes"),
    ({"nodes": 2, "locality_given": True}, "its own --switches"),
    ({"nodes": 2, "exclude": ("a100n1", "a100n3")}, "2 nodes exceed every leaf switch"),  # -x leaves 1 per leaf
])
def test_locality_is_never_added_where_it_could_change_the_job(req: dict[str, object], reason: str) -> None:
    opts, why = _added(LAB, **req)
    assert opts == () and reason in why, why


def test_single_node_jobs_get_nothing() -> None:
    d = classify(JobRequest(gpus=1, gpu_type="a100"), load_policy(str(LAB)))
    assert not any(o.startswith(("--switches", "--segment")) for o in d.added_options)


def test_block_plugin_asks_for_one_segment(tmp_path: Path) -> None:
    path = _variant(tmp_path, "  plugin: tree", "  plugin: block")
    assert _added(path, nodes=2)[0] == ("--segment=2",)
    opts, why = _added(path, nodes=3)
    assert opts == () and "exceed every block" in why
