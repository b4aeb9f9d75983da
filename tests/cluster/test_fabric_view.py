# SPDX-License-Identifier: Apache-2.0
"""The cluster view per leaf switch and block: free nodes and GPUs, and the largest job startable within one
unit, from `scontrol show topology` beside the node records (measured shapes: 22.05.8 tree, 24.11.5 block)."""

from __future__ import annotations

from slurm_gpu.cluster.view import from_texts, picture

NODE = ("NodeName={n} Arch=x86_64 CoresPerSocket=16 CPUAlloc={c} CPUTot=32 CPULoad=0.00 AvailableFeatures=a100 "
        "ActiveFeatures=a100 Gres=gpu:a100:4(S:0-1) GresUsed=gpu:a100:{g}(IDX:{idx}) NodeAddr=127.0.0.1 "
        "RealMemory=512000 AllocMem={m} FreeMem=500000 Sockets=2 Boards=1 State={s} ThreadsPerCore=1 "
        "Partitions=batch CfgTRES=cpu=32,mem=500G,billing=32,gres/gpu=4")
BUSY = {"a100n2": (16, 4, "0-3", 81920, "MIXED"), "a100n3": (4, 1, "0", 20480, "MIXED")}
TREE = ("SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=a100n[1-2]\nSwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=a100n[3-4]\n"
        "SwitchName=spine Level=1 LinkSpeed=1 Nodes=a100n[1-4] Switches=leaf1,leaf2\n")
BLOCK = ("BlockName=nvl1 BlockIndex=0 Nodes=a100n[1-2] BlockSize=2\nBlockName=nvl2 BlockIndex=1 Nodes=a100n[3-4] "
         "BlockSize=2\nAggregatedBlock=nvl[1-2] BlockIndex=2 Nodes=a100n[1-4] BlockSize=4\n")


def _nodes() -> str:
    out = []
    for n in ("a100n1", "a100n2", "a100n3", "a100n4"):
        c, g, idx, m, s = BUSY.get(n, (0, 0, "N/A", 0, "IDLE"))
        out.append(NODE.format(n=n, c=c, g=g, idx=idx, m=m, s=s))
    return "\n".join(out)


def test_free_per_leaf_and_largest_within_one_leaf() -> None:
    view = from_texts(_nodes(), topology_text=TREE)
    fab = view.summary["fabric"]
    assert [(u["kind"], u["name"], u["free_nodes"], u["free"]) for u in fab["units"]] == [
        ("leaf", "leaf1", 1, {"a100": 4}), ("leaf", "leaf2", 1, {"a100": 7})]  # the spine is not a leaf
    assert fab["largest_startable_one_unit"]["a100"]["leaf"] == {"units": 7, "nodes": 1, "name": "leaf2"}
    assert "largest a100 job startable within one leaf: 7 (leaf2, 1 free node)" in picture(view)


def test_blocks_and_no_fabric() -> None:
    fab = from_texts(_nodes(), topology_text=BLOCK).summary["fabric"]
    assert [u["name"] for u in fab["units"]] == ["nvl1", "nvl2"]  # the aggregate is not a block
    assert "fabric" not in from_texts(_nodes()).summary


def test_why_explains_a_switch_or_segment_wait() -> None:
    from slurm_gpu.cluster.why import topology_advice

    # the reader's fields of squeue --json=v0.0.42 on 24.11.5 (required_switches 1, maximum_switch_wait_time 60)
    assert list(topology_advice({"ReqSwitch": "1", "Wait4Switch": "60"})) == [
        "it asks for its nodes under at most 1 leaf switch (--switches) and waits up to 00:01:00 for that; "
        "then Slurm starts it across switches"]
    assert "each 2 of its nodes in one block" in next(iter(topology_advice({"SegmentSize": "2"})))
    assert list(topology_advice({})) == []
