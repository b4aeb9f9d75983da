# SPDX-License-Identifier: Apache-2.0
"""--wait's state line and exit code, from JobState records (what `scontrol show job -o` gives)."""

from __future__ import annotations

from slurm_gpu.adapters.slurm_cli import JobState, parse_kv_line
from slurm_gpu.follow import job_exit_code, state_line


def state(line: str) -> JobState:
    rec = parse_kv_line(line)
    rc, _, sig = rec.get("ExitCode", "0:0").partition(":")
    return JobState(job_id=int(rec["JobId"]), state=rec["JobState"], reason=None if rec.get("Reason") == "None"
                    else rec.get("Reason"), start_time=rec.get("StartTime"), node_list=rec.get("NodeList"),
                    run_time=rec.get("RunTime"), exit_code=int(rc), exit_signal=int(sig), raw=rec)


def test_pending_line_names_the_reason():
    job = state("JobId=7 JobState=PENDING Reason=Resources RunTime=00:00:00 StartTime=Unknown NodeList=(null) ExitCode=0:0")
    assert state_line(job) == "job 7: PENDING (Resources)"
    assert not job.finished


def test_running_line_names_node_start_and_elapsed():
    job = state("JobId=7 JobState=RUNNING Reason=None RunTime=00:01:07 StartTime=2026-11-29T22:20:09 "
                "NodeList=h100n1 ExitCode=0:0")
    assert state_line(job) == "job 7: RUNNING on h100n1 since 2026-11-29T22:20:09 (00:01:07)"


def test_exit_codes():
    assert job_exit_code(state("JobId=1 JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0")) == 3
    assert job_exit_code(state("JobId=1 JobState=COMPLETED Reason=None ExitCode=0:0")) == 0
    assert job_exit_code(state("JobId=1 JobState=CANCELLED Reason=None ExitCode=0:15")) == 128 + 15
    assert job_exit_code(state("JobId=1 JobState=TIMEOUT Reason=TimeLimit ExitCode=0:0")) == 1
    assert state("JobId=1 JobState=TIMEOUT Reason=TimeLimit ExitCode=0:0").finished
