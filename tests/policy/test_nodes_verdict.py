# SPDX-License-Identifier: Apache-2.0
"""Type resolution that respects -C/-w/-x, and check_nodes (the request against what the nodes offer),
over the lab policy's own nodes and over the lab's real node records (``scontrol show node -o`` of the
22.05.8 lab, data/lab-nodes-22.05.8.txt). What Slurm does with each shape is measured in the lab by
tests/fidelity/test_verdict_table.py and tests/job_submit/test_plugin_lab.py; here the pure core's
answers and their reasons."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_gpu.policy import classify, load_policy
from slurm_gpu.policy.constraint import features_of, fits, holds, parse_constraint
from slurm_gpu.policy.nodes import Inventory, policy_inventory, records_inventory
from slurm_gpu.slurm.records import read_node_records
from slurm_gpu.slurm.sbatch.parse import parse_submission
from slurm_gpu.slurm.sbatch.to_request import to_job_request

ROOT = Path(__file__).resolve().parents[2]
LAB_NODES = Path(__file__).parent / "data" / "lab-nodes-22.05.8.txt"


@pytest.fixture(scope="module")
def uni():
    return load_policy(str(ROOT / "examples" / "policies" / "university.yaml"))


@pytest.fixture(scope="module")
def live() -> Inventory:
    return records_inventory(read_node_records(LAB_NODES.read_text()).nodes)


def decide(policy, line: str, inventory: Inventory | None = None):
    sub = parse_submission([*line.split(), "--wrap=true"], {}, None)
    return classify(to_job_request(sub, user="labuser", groups=()), policy, inventory)


@pytest.mark.parametrize("text,nodes,want", [
    ("h100", [{"h100"}, {"a100"}], True),
    ("v100", [{"h100"}, {"a100"}], False),
    ("h100&mig", [{"h100", "mig"}], True),
    ("h100,mig", [{"h100"}, {"mig"}], False),  # "," is AND: one node needs both
    ("h100|a100", [{"a100"}], True),
    ("[h100|a100]", [{"a100"}], True),
    ("(h100|a100)&mig", [{"a100", "mig"}], True),
    ("(h100|a100)&mig", [{"a100"}], False),
    ("h100*1&a100*1", [{"h100"}, {"a100"}], True),  # counts: each on some node
    ("[h100*1&a100*1]", [{"h100"}], False),
    ("h100|a100&mig", [{"h100"}], False),  # left to right: (h100|a100)&mig, as slurmctld reads it
])
def test_constraint_fits(text, nodes, want) -> None:
    assert fits(parse_constraint(text), nodes) is want


@pytest.mark.parametrize("text", ["", "h100&", "(h100", "h100)", "*2", "a b", "h100*x", "[a|b", "a||b"])
def test_constraint_that_slurm_cannot_read(text) -> None:
    with pytest.raises(ValueError):
        parse_constraint(text)


def test_constraint_features_and_per_node() -> None:
    t = parse_constraint("[rack1*2&rack2*4]|(knl&snc4)*4")
    assert features_of(t) == ("rack1", "rack2", "knl", "snc4")
    assert holds(parse_constraint("a&b"), {"a", "b"}) and not holds(parse_constraint("a&b"), {"a"})


def test_policy_nodes_are_what_emit_renders(uni) -> None:
    inv = policy_inventory(uni)
    by = {n.name: n for n in inv.nodes}
    assert set(by) == {"h100n1", "h100n2", "a100n1", "a100mig1"}
    # static MIG: the node's gres are its slices, as emitted
    assert set(by["a100mig1"].gres) == {("gpu", "a100_2g.20gb", 12), ("gpu", "a100_1g.10gb", 4)}
    assert set(by["a100mig1"].partitions) == {"mig"}
    assert by["a100n1"].features == {"a100", "mig"} and by["a100n1"].gres == (("gpu", "a100", 4),)
    assert set(by["a100n1"].partitions) == {"interactive", "batch", "spot", "mig"}
    # MIG slices of a MIG-capable type without a static layout: unknown from the policy alone
    assert by["a100n1"].count("gpu", "a100_2g.20gb") > 0


def test_live_records_carry_features_and_gres(live) -> None:
    by = {n.name: n for n in live.nodes}
    assert by["h100n1"].features == {"h100", "mig"} and by["h100n1"].count("gpu", "h100") == 8
    assert by["a100n1"].count("gpu", "a100_2g.20gb") == 0  # the cluster knows: no slices
    assert by["a100n1"].memory_mb == 512000 and by["a100n1"].cpus == 32


@pytest.mark.parametrize("line,gres", [
    ("--constraint=h100 --gres=gpu:1 -t 10", "gpu:h100:1"),  # not the partition default a100
    ("--gres=gpu:1 -t 10", "gpu:a100:1"),  # unconstrained: the default stays
    ("-C [h100|a100] -G1 -t 10", "gpu:a100:1"),  # both fit: the policy's order
    ("-x a100n1 -G1 -t 10", "gpu:h100:1"),
    ("-w h100n2 -G1 -t 10", "gpu:h100:1"),
    ("-C h100*1&a100*1 -N2 -G2 -t 10", "gpu:1"),  # no one type fits: left untyped for Slurm
    # as many nodes as the job needs: interactive's default a100 has one node, h100 two (issue 19's rule)
    ("-N2 --ntasks-per-node=1 --gpus-per-node=1 -t 15", "gpu:h100:1"),
    ("-p batch -N3 --gpus-per-node=1 -t 120", "gpu:1"),  # no type has 3 nodes, the partition has: untyped
])
def test_type_respects_the_request(uni, live, line, gres) -> None:
    for inv in (None, live):
        d = decide(uni, line, inv)
        assert d.accepted and d.gres == gres, (line, inv and inv.source, d.message, d.reasons)


@pytest.mark.parametrize("line,why", [
    ("--gpus=h100:1,a100:1 -t 10", "gpu:h100:1,gpu:a100:1 per node needed, 0 found"),
    ("--gres=shard:1 -t 10", "shard:1 per node needed"),
    ("-C foo -G1 -t 10", "no node has the feature(s) foo"),
    ("-C h100 -p mig -G1 -t 10", "--constraint=h100 needed, 0 found"),
    ("-p mig -w h100n1 -G1 -t 10", "-w names h100n1, not in partition mig"),
])
def test_verdict_refuses_what_no_node_serves(uni, live, line, why) -> None:
    for inv in (None, live):
        d = decide(uni, line, inv)
        assert not d.accepted and why in (d.message or ""), (line, d.message)


def test_type_holds_the_tasks_cpus_where_the_cluster_says(live, uni) -> None:
    """-n 3 -c 16 in interactive: 48 CPUs, one 32-CPU a100 node cannot hold them, two h100 nodes can (sbatch
    --test-only refused the a100-typed job, plain sbatch's ran on 2 nodes). The policy's own nodes give no
    CPU totals: there the default a100 stays (and the compiled job_submit.lua, which has none, does so)."""
    d = decide(uni, "-n 3 -c 16 --gres=gpu:1 -t 10", live)
    assert d.accepted and d.gres == "gpu:h100:1", (d.message, d.reasons)
    assert decide(uni, "-n 3 -c 16 --gres=gpu:1 -t 10").gres == "gpu:a100:1"


def test_a_task_wider_than_every_node_is_refused(uni, live) -> None:
    """-c 33 on 32-CPU nodes: no node holds the one task's CPUs (sbatch --test-only: "Requested node
    configuration is not available"); the policy's own nodes give no CPU totals, so Slurm judges there."""
    d = decide(uni, "--gres=gpu:1 --cpus-per-task=33 -t 10", live)
    assert not d.accepted and "33 CPUs per node" in (d.message or ""), d.message
    assert decide(uni, "--gres=gpu:1 --cpus-per-task=32 -t 10", live).accepted


def test_live_nodes_decide_what_the_policy_cannot_know(uni, live) -> None:
    # the MIG slice and the fraction: the policy alone does not know the slices; the cluster says none
    for line in ("--gres=gpu:a100_1g.10gb:1 -p mig -t 10", "--gpu-fraction=0.25 -t 30"):
        assert decide(uni, line).accepted, line
        d = decide(uni, line, live)
        assert not d.accepted and "a100" in (d.message or ""), (line, d.message)
    # per-node totals come only from the cluster's records
    assert decide(uni, "--mem=600G -G1 -t 10").accepted
    assert "614400 MB per node" in (decide(uni, "--mem=600G -G1 -t 10", live).message or "")
    # and what the nodes do have still passes
    assert decide(uni, "--mem=400G -G1 -t 10", live).accepted


def test_without_node_data_the_policy_alone_decides(uni) -> None:
    off = Inventory((), "off")
    assert decide(uni, "--gpus=h100:1,a100:1 -t 10", off).accepted
    assert decide(uni, "--gpu-fraction=0.25 -t 30", off).gres == "gpu:a100_2g.20gb:1"
