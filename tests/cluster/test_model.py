# SPDX-License-Identifier: Apache-2.0
"""The cluster view's numbers on recorded Slurm records, against hand calculations (docs/cluster.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from slurm_gpu.cluster.model import node_availability, state_words, unit_of
from slurm_gpu.cluster.view import from_texts
from slurm_gpu.slurm.records import GresCount, JobGres, job_gres, parse_gres_counts, parse_node_records, read_jobs

_spec = importlib.util.spec_from_file_location("cluster_records", Path(__file__).with_name("cluster_records.py"))
R = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("cluster_records", R)
_spec.loader.exec_module(R)

H100_FRAG = {"1": 0.0, "2": 0.0, "3": 0.0, "4": 0.3, "5": 0.3, "6": 0.3, "7": 0.3, "8": 1.0}


@pytest.mark.parametrize("release", ["22.05", "24.11"])
def test_lab_capture_by_hand(release):
    # jobs 1182 (h100:3, 12 CPUs) and 1183 (h100:2, -c 20) on h100n1: 32/32 CPUs taken, 3 GPUs free but stranded;
    # 1185 (h100:1) on h100n2: 7 free, 28 CPUs free (7 x DefCpuPerGPU=4), 440 GiB free (7 x 60 GiB);
    # 1184 (a100:1, --mem=400G) on a100n1: 3 free, 100 GiB free = 1 x DefMemPerGPU 61440 -> 2 stranded
    t = R.lab_texts(release)
    s = from_texts(t["nodes.txt"], t["jobs.json"], t["partitions.txt"], t["gres.conf"]).summary
    h, a = s["types"]["h100"], s["types"]["a100"]
    assert (h["total"], h["allocated"], h["free"], h["unavailable"], h["planned"]) == (16, 6, 10, 0, 0)
    assert h["stranded"] == 3
    assert h["largest_startable"] == {"one_node": 7, "any_nodes": 7}
    assert h["fragmentation"] == H100_FRAG  # free 3 + 7: k <= 3 none short; 4..7: 3/10; 8: 10/10
    # job mix h100: 1185 -> 1, 1183 and 195 (2 per node on 2 nodes) -> 2, 1182 -> 3, 247 -> 8: (0+0+0+0+1)/5
    assert s["job_mix"]["h100"] == {"1": 1, "2": 2, "3": 1, "8": 1}
    assert h["fragmentation_job_mix"] == 0.2
    assert (a["total"], a["allocated"], a["free"], a["stranded"]) == (4, 1, 3, 2)
    assert a["largest_startable"] == {"one_node": 1, "any_nodes": 1}
    assert a["fragmentation"] == {"1": 0.0, "2": 0.0, "3": 0.0, "4": 1.0}
    assert a["fragmentation_job_mix"] == 0.0 and s["job_mix"]["a100"] == {"1": 1}
    assert sorted(s["partitions"]) == ["batch", "interactive", "mig", "spot"]
    assert s["partitions"]["mig"] == {"a100": s["partitions"]["mig"]["a100"]}  # a100n1 only
    # the mig partition asks DefCpuPerGPU=8: 28 free CPUs -> 3, memory still 1
    assert s["partitions"]["mig"]["a100"]["largest_startable"]["one_node"] == 1
    assert s["partitions"]["batch"]["h100"]["free"] == 10


def test_unavailable_planned_and_stranded_by_hand():
    nodes = "\n".join([
        R.node_line("g1", state="MIXED", used="gpu:h100:2(IDX:0-1)", cpu_alloc=8),  # 6 free, 24 CPUs: 6 usable
        R.node_line("g2", state="IDLE+DRAIN", reason="bad GPU [root@2026-12-01T00:00:00]"),  # 8 unavailable
        R.node_line("g3", state="MIXED+DRAIN", used="gpu:h100:5(IDX:0-4)", cpu_alloc=20),  # 5 alloc + 3 unavail
        R.node_line("g4", state="DOWN*"),  # 8 unavailable
        R.node_line("g5", state="IDLE+POWERED_DOWN"),  # 8 unavailable
        R.node_line("g6", state="IDLE+PLANNED"),  # 8 free, of which planned
        R.node_line("g7", state="MIXED", used="gpu:h100:7(IDX:0-6)", cpu_alloc=20, mem=512000,
                    mem_alloc=512000 - 30000),  # 1 free, 12 CPUs, 30000 MB < 61440: stranded
    ])
    parts = ("PartitionName=batch AllowGroups=ALL Nodes=g[1-7] JobDefaults=DefCpuPerGPU=4,DefMemPerGPU=61440 "
             "State=UP TRES=cpu=224")
    s = from_texts(nodes, "", parts).summary
    h = s["types"]["h100"]
    assert h["total"] == 56
    assert h["allocated"] == 2 + 5 + 7
    assert h["unavailable"] == 8 + 3 + 8 + 8
    assert h["free"] == 6 + 8 + 1
    assert h["planned"] == 8
    assert h["stranded"] == 1
    assert h["largest_startable"] == {"one_node": 8, "any_nodes": 14}
    # free per node: g1 6, g6 8, g7 1 (15): k=2..6 -> 1/15, k=7,8 -> 7/15
    assert h["fragmentation"]["1"] == 0.0
    assert h["fragmentation"]["2"] == round(1 / 15, 6)
    assert h["fragmentation"]["7"] == round(7 / 15, 6)
    assert h["fragmentation"]["8"] == round(7 / 15, 6)
    assert h["fragmentation_job_mix"] is None
    assert s["nodes"] == {"total": 7, "unavailable": 4, "planned": 1}


def test_mig_shards_and_mps_count_in_their_own_units():
    nodes = "\n".join([
        R.node_line("m1", gres="gpu:a100:2(S:0),gpu:a100_1g.10gb:7(S:1)",
                    used="gpu:a100:1(IDX:0),gpu:a100_1g.10gb:3(IDX:2,4-5)"),
        R.node_line("s1", gres="gpu:h100:2(S:0-1),shard:h100:16(S:0-1)",
                    used="gpu:h100:1(IDX:0),shard:h100:5(0/8,5/8)"),
        R.node_line("p1", gres="gpu:(null):4(S:0-1),mps:400(S:0-1)", used="gpu:(null):4(IDX:0-3),mps:100(IDX:N/A)"),
    ])
    jobs = R.jobs_json(
        R.job_line(1, "ann", "RUNNING", "m1", "gpu:a100_1g.10gb:2(IDX:2,4)", "TresPerNode=gres:gpu:a100_1g.10gb:2"),
        R.job_line(2, "bob", "PENDING", None, None, "TresPerJob=gres/shard:h100:4"),
        R.job_line(3, "cat", "PENDING", None, None, "TresPerJob=gres:gpu:3"),  # untyped: every GPU type
    )
    s = from_texts(nodes, jobs).summary
    t = s["types"]
    assert t["a100"] == {**t["a100"], "unit": "gpu", "total": 2, "allocated": 1, "free": 1}
    mig = t["a100_1g.10gb"]
    assert (mig["unit"], mig["total"], mig["allocated"], mig["free"]) == ("mig", 7, 3, 4)
    assert mig["largest_startable"] == {"one_node": 4, "any_nodes": 4}
    assert mig["fragmentation"]["4"] == 0.0 and mig["fragmentation"]["5"] == 1.0
    # s1: GPU 0 held whole, 5 of GPU 1's 8 shards held. A GPU is held whole or in shards, never both
    # (docs/cluster.md "Shards"): GPU 0's 8 shards are not free, GPU 1 is no free h100
    shard = t["shard:h100"]
    assert (shard["unit"], shard["total"], shard["allocated"], shard["free"]) == ("shard", 16, 8 + 5, 8 - 5)
    assert (t["h100"]["allocated"], t["h100"]["free"]) == (2, 0)
    assert s["job_mix"]["shard:h100"] == {"4": 1}
    assert shard["fragmentation_job_mix"] == 1.0  # the 3 free shards are on one GPU: a 4-shard job fits nowhere
    assert (t["mps"]["unit"], t["mps"]["total"], t["mps"]["free"]) == ("mps", 400, 300)
    assert (t["gpu"]["total"], t["gpu"]["free"]) == (4, 0)  # gpu:(null): an untyped GPU
    # the untyped 3-GPU request joins a100, h100 and gpu; a100 has 1 free on m1: F(3) = 1.0
    assert s["job_mix"]["a100"] == {"3": 1} and t["a100"]["fragmentation_job_mix"] == 1.0
    assert "a100_1g.10gb" not in s["job_mix"] or s["job_mix"]["a100_1g.10gb"] == {"2": 1}


def test_gres_spellings():
    assert parse_gres_counts("gpu:h100:5(IDX:0-4)") == (GresCount("gpu", "h100", 5, frozenset(range(5))),)
    assert parse_gres_counts("gres/gpu:h100:2") == parse_gres_counts("gres:gpu:h100:2") == (
        GresCount("gpu", "h100", 2),)
    assert parse_gres_counts("gpu:(null):4(IDX:0-3)") == (GresCount("gpu", None, 4, frozenset(range(4))),)
    assert parse_gres_counts("gpu:h100:0(IDX:N/A)") == (GresCount("gpu", "h100", 0, frozenset()),)
    assert parse_gres_counts("gpu:h100:2(IDX:0,4),mps:1K") == (GresCount("gpu", "h100", 2, frozenset({0, 4})),
                                                                 GresCount("mps", None, 1024))
    assert parse_gres_counts("gpu:h100") == (GresCount("gpu", "h100", 1),)
    assert parse_gres_counts("(null)") == parse_gres_counts("") == parse_gres_counts("N/A") == ()
    assert parse_gres_counts("gpu:h100:x:y,:3,gpu:2") == (GresCount("gpu", None, 2),)  # bad items skipped
    assert unit_of(GresCount("gpu", "a100_3g.40gb", 1)) == ("a100_3g.40gb", "mig")
    assert unit_of(GresCount("nic", None, 1)) is None


@pytest.mark.parametrize("state,want", [("IDLE", "ok"), ("MIXED", "ok"), ("ALLOCATED", "ok"),
                                        ("IDLE+DRAIN", "unavailable"), ("MIXED+DRAIN", "unavailable"),
                                        ("DOWN*", "unavailable"), ("IDLE*", "unavailable"),
                                        ("IDLE+POWERED_DOWN", "unavailable"), ("IDLE~", "unavailable"),
                                        ("IDLE+POWERING_UP", "unavailable"), ("IDLE+PLANNED", "planned"),
                                        ("idle-", "planned"), ("MIXED+COMPLETING", "ok"), ("FUTURE", "unavailable")])
def test_node_states(state, want):
    assert node_availability(state) == want
    assert state_words("DOWN*+DRAIN") == {"DOWN", "NOT_RESPONDING", "DRAIN"}


def _one(job: dict) -> JobGres:
    (rec,) = read_jobs(R.jobs_json(job)).jobs
    return job_gres(rec)


def test_multi_node_job_reads_every_node_group():
    job = _one(R.job_line(9, "ann", "RUNNING", "h100n1", "gpu:h100:2(IDX:0-1)", "TresPerNode=gres:gpu:h100:2", 2,
                          more=(("h100n2", "gpu:h100:2(IDX:6-7)"),)))
    assert [(n, sorted(g[0].idx)) for n, g in job.held] == [("h100n1", [0, 1]), ("h100n2", [6, 7])]
    assert job.request == (GresCount("gpu", "h100", 2),) and job.num_nodes == 2 and job.user == "ann"


def test_hostile_text_gives_no_traceback():
    assert parse_node_records("NodeName=\nNodeName=x State= Gres=gpu:h100:zz CPUTot=-1\ngarbage") != []
    s = from_texts("NodeName=x State=IDLE Gres=gpu:h100:2 GresUsed=gpu:h100:5(IDX:0-4) Partitions=").summary
    assert s["types"]["h100"]["free"] == 0 and s["types"]["h100"]["allocated"] == 2  # used beyond total capped
    assert s["types"]["h100"]["unavailable"] == 0


def test_huge_counts_and_indices_stay_bounded():
    nodes = R.node_line("h1", gres="gpu:h100:99999999999999(S:0-1)", used="gpu:h100:2(IDX:0-99999999999)")
    view = from_texts(nodes)
    h = view.summary["types"]["h100"]
    assert h["allocated"] == 2 and len(h["fragmentation"]) == 1024
    assert parse_gres_counts("gpu:h100:2(IDX:0-99999999999)") == (GresCount("gpu", "h100", 2, None),)
    assert parse_gres_counts("gpu:h100:2(IDX:3-1)") == (GresCount("gpu", "h100", 2, None),)
    from slurm_gpu.cluster.view import picture

    assert len(picture(view)) < 10_000


def test_a_pending_jobs_node_range_spreads_its_gpus():
    """A pending `-N 2 --gpus=h100:8` job reads NumNodes=2-2 (a range): 4 per node, not 8 on one."""
    for (low, high), per_node in (((2, 2), 4), ((2, 4), 4), ((3, 0), 3), ((None, 0), 8), ((0, 0), 8)):
        job = R.job_line(7, "bob", "PENDING", None, None, "TresPerJob=gres/gpu:h100:8", low, high)
        assert [g.count for g in _one(job).request] == [per_node], (low, high)
