# SPDX-License-Identifier: Apache-2.0
"""--wait's state line and exit code, from JobState records (what `scontrol show job -o` gives)."""

from __future__ import annotations

import io

import pytest

from slurm_gpu.slurm.records import JobState, parse_kv_line
from slurm_gpu.submit.follow import follow_job, job_exit_code, state_line


def state(line: str) -> JobState:
    rec = parse_kv_line(line)
    rc, _, sig = rec.get("ExitCode", "0:0").partition(":")
    return JobState(job_id=int(rec["JobId"]), state=rec["JobState"], reason=None if rec.get("Reason") == "None"
                    else rec.get("Reason"), start_time=rec.get("StartTime"), node_list=rec.get("NodeList"),
                    run_time=rec.get("RunTime"), exit_code=int(rc), exit_signal=int(sig), raw=rec)


def test_pending_line_names_the_reason():
    job = state("JobId=7 JobState=PENDING Reason=Resources RunTime=00:00:00 StartTime=Unknown NodeList=(null) "
                "ExitCode=0:0")
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


class ScriptedJobs:
    """An in-process JobWatch that answers from a list of recorded `scontrol show job -o` lines; an
    exception in the list is raised instead (what the adapter raises when Slurm does not answer)."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.calls = 0

    def job_state(self, job_id):
        self.calls += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return None if answer is None else state(answer)


def test_each_miss_counts_once():
    """Three failed polls in a row are three misses: with max_misses=3 the fourth poll's answer counts."""
    from slurm_gpu.errors import SlurmUnreachable

    jobs = ScriptedJobs([SlurmUnreachable("scontrol gave no answer within 15 s"), None,
                         SlurmUnreachable("scontrol gave no answer within 15 s"),
                         "JobId=7 JobState=COMPLETED Reason=None ExitCode=0:0"])
    out = io.StringIO()
    assert follow_job(jobs, 7, out, interval_s=0, sleep=lambda s: None, max_misses=3) == 0
    assert jobs.calls == 4 and out.getvalue() == "job 7: COMPLETED, exit code 0\n"


def test_the_last_real_error_is_reported():
    from slurm_gpu.errors import SlurmUnreachable, SubmitError

    jobs = ScriptedJobs([SlurmUnreachable("first"), SlurmUnreachable("scontrol: Socket timed out"), None])
    with pytest.raises(SubmitError, match=r"no state after 3 tries; last error: scontrol: Socket timed out"):
        follow_job(jobs, 7, io.StringIO(), interval_s=0, sleep=lambda s: None, max_misses=2)
