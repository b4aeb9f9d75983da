# SPDX-License-Identifier: Apache-2.0
"""The parsers of Slurm's records, on texts the lab's 22.05.8 and 24.11.5 printed (pure; no Slurm)."""

from __future__ import annotations

import pytest

from slurm_gpu.errors import SlurmGpuError
from slurm_gpu.slurm.records import (
    job_detail,
    job_state_of,
    node_allocs,
    one_line,
    parse_kv_line,
    parse_nodes,
    parse_parsable,
    parse_sbatch_version,
    parse_test_only,
)

# scontrol show job -d, Slurm 22.05.8 (the lab, a running 2-GPU job)
DETAIL_22_05 = """JobId=55 JobName=wrap
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   Priority=4294901730 Nice=0 Account=lab QOS=normal
   JobState=RUNNING Reason=None Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   RunTime=00:00:03 TimeLimit=00:02:00 TimeMin=N/A
   Partition=batch AllocNode:Sid=localhost:10887
   NodeList=h100n1
   NumNodes=1 NumCPUs=4 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=4,mem=16000M,node=1,billing=4,gres/gpu=2,gres/gpu:h100=2
   JOB_GRES=gpu:h100:2
     Nodes=h100n1 CPU_IDs=0-3 Mem=16000 GRES=gpu:h100:2(IDX:0-1)
   MinCPUsNode=1 MinMemoryCPU=4000M MinTmpDiskNode=0
   StdOut=/dev/null
   CpusPerTres=gres:gpu:2
   TresPerNode=gres:gpu:h100:2
"""

# 24.11.5: the same lines, `gres/` spellings, two nodes on one detail line
DETAIL_24_11 = """JobId=9 JobName=x
   JobState=RUNNING Reason=None Dependency=(null)
   NodeList=node[1-2]
   JOB_GRES=gpu:h100:4
     Nodes=node[1-2] CPU_IDs=16-23 Mem=32000 GRES=gpu:h100:2(IDX:6-7)
   CpusPerTres=gres/gpu:4 TresBind=gres/gpu:closest TresPerNode=gres/gpu:h100:2
"""


def test_job_detail_22_05():
    fields, allocs = job_detail(DETAIL_22_05)
    assert fields["JobState"] == "RUNNING" and fields["Partition"] == "batch" and fields["CpusPerTres"] == "gres:gpu:2"
    assert fields["TRES"].endswith("gres/gpu:h100=2")  # values keep their own '='
    (alloc,) = allocs
    assert (alloc.node, sorted(alloc.cpu_ids), sorted(alloc.gpu_idx)) == ("h100n1", [0, 1, 2, 3], [0, 1])
    assert alloc.gres == "gpu:h100:2(IDX:0-1)"
    assert "Nodes" not in fields and "CPU_IDs" not in fields  # the per-node line is not a job field


def test_job_detail_24_11_line_for_two_nodes():
    fields, allocs = job_detail(DETAIL_24_11)
    assert fields["TresBind"] == "gres/gpu:closest"
    assert [a.node for a in allocs] == ["node1", "node2"]
    assert all(sorted(a.gpu_idx) == [6, 7] and len(a.cpu_ids) == 8 for a in allocs)


def test_finished_job_has_no_gpus_in_its_detail_line():
    (alloc,) = node_allocs("   Nodes=a100n1 CPU_IDs=0-3,16-19 Mem=32000 GRES=\n")
    assert alloc.gpu_idx == frozenset() and alloc.cpu_ids == frozenset({0, 1, 2, 3, 16, 17, 18, 19})


def test_several_gpu_types_and_non_gpu_gres():
    (alloc,) = node_allocs("Nodes=n1 CPU_IDs=0 Mem=1 GRES=gpu:a100:1(IDX:2),gpu:h100:2(IDX:0,4),mps:100(0/100)\n")
    assert sorted(alloc.gpu_idx) == [0, 2, 4]


def test_parsable():
    assert parse_parsable("42\n") == parse_parsable("42") and parse_parsable("42").job_id == 42
    r = parse_parsable("sbatch: warning: x\n43;lab\n")
    assert (r.job_id, r.cluster) == (43, "lab")
    assert parse_parsable("") is None and parse_parsable("Submitted batch job 4") is None


def test_test_only_22_05_and_24_11():
    r = parse_test_only("sbatch: Job 5 to start at 2026-11-29T20:40:23 using 8 processors on nodes vm "
                        "in partition batch\n")
    assert (r.job_id, r.start, r.processors, r.nodes, r.partition, r.preempts) == (
        5, "2026-11-29T20:40:23", 8, "vm", "batch", ())
    r = parse_test_only("sbatch: Job 45 to start at 2026-11-29T21:00:00 using 1 processors on nodes node1 in "
                        "partition interactive\nsbatch:   Preempts: 39,40\n")
    assert r.preempts == (39, 40)
    assert parse_test_only("allocation failure: Requested node configuration is not available\n").job_id is None


def test_job_state_of_a_failed_job():
    rec = parse_kv_line("JobId=24 JobName=ex3.sh JobState=FAILED Reason=NonZeroExitCode Dependency=(null) "
                        "ExitCode=3:0 NodeList=a100n1 Command=/tmp/a b/job.sh")
    job = job_state_of(24, rec)
    assert (job.state, job.reason, job.exit_code, job.exit_signal, job.finished) == (
        "FAILED", "NonZeroExitCode", 3, 0, True)
    assert rec["Command"] == "/tmp/a b/job.sh"
    pending = job_state_of(1, parse_kv_line("JobId=1 JobState=PENDING Reason=None ExitCode=0:0"))
    assert pending.reason is None and not pending.finished


def test_show_node_o():
    text = ("NodeName=h100n1 Arch=x86_64 CoresPerSocket=16  CPUAlloc=4 Gres=gpu:h100:8(S:0-1) OS=Linux 6.18.44 #1 SMP "
            "PREEMPT_DYNAMIC @0  RealMemory=512000 State=MIXED CfgTRES=cpu=32,mem=500G,gres/gpu=8\n"
            "NodeName=a100n1 CoresPerSocket=16 Gres=gpu:a100:4(S:0-1) State=IDLE\n")
    nodes = parse_nodes(text)
    assert sorted(nodes) == ["a100n1", "h100n1"]
    assert nodes["h100n1"]["Gres"] == "gpu:h100:8(S:0-1)" and nodes["h100n1"]["State"] == "MIXED"
    assert nodes["h100n1"]["OS"] == "Linux 6.18.44 #1 SMP PREEMPT_DYNAMIC @0"


def test_version_and_error_line():
    assert parse_sbatch_version("slurm-wlm 24.11.5\n") == (24, 11, 5)
    assert parse_sbatch_version("slurm 22.05.8") == (22, 5, 8)
    with pytest.raises(SlurmGpuError, match="cannot read a Slurm version"):
        parse_sbatch_version("sbatch: command not found")
    err = "sbatch: error: s_p_parse_file: cannot stat file x\nsbatch: fatal: Unable to process configuration file\n"
    assert one_line(err, "") == "Unable to process configuration file"
    assert one_line("", "no message") == "no message"
