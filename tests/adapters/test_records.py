# SPDX-License-Identifier: Apache-2.0
"""The parsers of Slurm's records, on texts the lab's 22.05.8 and 24.11.5 printed (pure; no Slurm)."""

from __future__ import annotations

import pytest

from slurm_gpu.errors import SlurmGpuError
from slurm_gpu.slurm.records import (
    job_state_of,
    one_line,
    parse_kv_line,
    parse_nodes,
    parse_parsable,
    parse_sbatch_version,
    parse_test_only,
)


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
