# SPDX-License-Identifier: Apache-2.0
"""The burst's mix and its tally (slurm_gpu.lab.burst), without Slurm: the mix is reproducible and
covers both tools, and the tally finds each way a job can go unaccounted for."""

from __future__ import annotations

from slurm_gpu.lab import burst
from slurm_gpu.lab.burst import Burst, BurstJob, JobSeen, Prediction, Submission

MSG = "this cluster runs GPU jobs only: ask for a GPU (--gpus=h100:1) or keep CPU-only jobs under 30 minutes"


def test_mix_is_seeded_and_uses_every_shape_and_tool() -> None:
    a, b = burst.job_mix(400, seed=3), burst.job_mix(400, seed=3)
    assert a == b and a != burst.job_mix(400, seed=4)
    assert [j.index for j in a] == list(range(400))
    assert {j.kind for j in a} == {s.kind for s in burst.SHAPES}
    assert {j.tool for j in a} == {"gpusub", "sbatch"}
    assert {j.command for j in a} == {"true", "hostname"}
    gpusub_only = {s.variants for s in burst.SHAPES if s.tools == ("gpusub",)}
    for job in a:  # a tool-specific shape (gpusub --class) never goes to sbatch
        if job.tool == "sbatch":
            assert not any(job.options in v for v in gpusub_only), job


def test_argv_is_parsable_with_the_command_wrapped() -> None:
    job = BurstJob(0, "gpusub", "spot", ("--class", "spot", "--gpus=h100:1"), "hostname")
    assert job.argv("/x/gpusub") == ["/x/gpusub", "--parsable", "--class", "spot", "--gpus=h100:1", "--wrap=hostname"]
    assert BurstJob(1, "sbatch", "CPU-only", ("-t", "10"), "true").argv("/x/gpusub")[:2] == ["sbatch", "--parsable"]


def _case():
    jobs = (BurstJob(0, "sbatch", "typed GPU", ("--gpus=h100:1", "-t", "60"), "true"),
            BurstJob(1, "gpusub", "CPU-only", ("-t", "10"), "hostname"),
            BurstJob(2, "sbatch", "out of policy", (), "true"))
    predicted = {0: Prediction(True, "batch", "normal", None, "gpu:h100:1"),
                 1: Prediction(True, "interactive", "debug", None, None), 2: Prediction(False, None, None, MSG, None)}
    subs = (Submission(0, 0, 10, "", 0.01), Submission(1, 0, 11, "", 0.2),
            Submission(2, 1, None, f"sbatch: error: {MSG[:40]}\n{MSG[40:]}", 0.01))
    queue = {10: JobSeen(10, "batch", "normal", "COMPLETED"), 11: JobSeen(11, "interactive", "debug", "COMPLETED")}
    hooked = {"prolog": {10}, "epilog": {10}}
    return jobs, predicted, Burst(subs, 1.0), queue, dict(queue), hooked


def test_every_job_accounted_for() -> None:
    jobs, predicted, b, queue, acct, hooked = _case()
    t = burst.tally(jobs, predicted, b, queue, acct, hooked)
    assert t.ok and (t.submitted, t.refused, t.completed) == (2, 1, 2)
    assert dict(t.by_place) == {"batch/normal": 1, "interactive/debug": 1}
    assert b.rate == 3.0


def test_each_way_a_job_goes_unaccounted_for() -> None:
    jobs, predicted, b, queue, acct, hooked = _case()
    wrong = Burst((b.submissions[0], b.submissions[1], Submission(2, 1, None, "sbatch: error: Invalid qos", 0.01)), 1)
    assert [p.kind for p in burst.tally(jobs, predicted, wrong, queue, acct, hooked).problems] == ["message"]
    took = Burst((*b.submissions[:2], Submission(2, 0, 12, "", 0.01)), 1)
    t = burst.tally(jobs, predicted, took, {**queue, 12: JobSeen(12, "batch", "normal", "PENDING")}, acct, hooked)
    assert [p.kind for p in t.problems] == ["accepted", "unfinished"] and t.stuck == (12,)
    t = burst.tally(jobs, predicted, b, {11: queue[11]}, acct, hooked)
    assert [p.kind for p in t.problems] == ["lost"] and t.completed == 1
    t = burst.tally(jobs, predicted, b, {**queue, 10: JobSeen(10, "spot", "spot", "COMPLETED")}, acct, hooked)
    assert len(t.mismatched) == 1 and "spot/spot in squeue, predicted batch/normal" in t.mismatched[0]
    assert not t.problems
    t = burst.tally(jobs, predicted, b, {**queue, 10: JobSeen(10, "spot", "spot", "COMPLETED")},
                    {**acct, 10: JobSeen(10, "spot", "spot", "COMPLETED")}, hooked)
    assert t.mismatched == ("#0 sbatch --gpus=h100:1 -t 60: job 10 spot/spot in squeue, spot/spot in sacct, "
                            "predicted batch/normal",)
    t = burst.tally(jobs, predicted, b, queue, {**acct, 11: JobSeen(11, "batch", "normal", "COMPLETED")}, hooked)
    assert len(t.mismatched) == 1 and t.mismatched[0].endswith("batch/normal in sacct, predicted interactive/debug")
    t = burst.tally(jobs, predicted, b, queue, {10: acct[10]}, hooked)
    assert [p.kind for p in t.problems] == ["unrecorded"]
    t = burst.tally(jobs, predicted, b, {**queue, 10: JobSeen(10, "batch", "normal", "FAILED")}, acct, hooked)
    assert [p.kind for p in t.problems] == ["failed", "unrecorded"]
    failed = {**queue, 10: JobSeen(10, "batch", "normal", "FAILED")}
    killed = {**acct, 10: JobSeen(10, "batch", "normal", "FAILED", "0:12")}
    t = burst.tally(jobs, predicted, b, failed, killed, hooked, {10})  # chosen for preemption, killed by USR2
    assert [p.kind for p in t.problems] == ["preempted"] and "signal 12" in t.problems[0].text
    assert [p.kind for p in burst.tally(jobs, predicted, b, failed, killed, hooked).problems] == ["failed"]
    exited = {**acct, 10: JobSeen(10, "batch", "normal", "FAILED", "12:0")}  # its own exit status
    assert [p.kind for p in burst.tally(jobs, predicted, b, failed, exited, hooked, {10}).problems] == ["failed"]
    t = burst.tally(jobs, predicted, b, queue, acct, {"prolog": {10}, "epilog": set()})
    assert [p.kind for p in t.problems] == ["unhooked"]  # only the GPU job is logged by the hooks
    assert burst.tally(jobs, predicted, b, queue, acct, None).ok  # a lab without hooks: not asked
    refused = Burst((Submission(0, 1, None, "sbatch: error: QOSMaxGRESPerJob", 0.01), *b.submissions[1:]), 1)
    assert [p.kind for p in burst.tally(jobs, predicted, refused, queue, acct, hooked).problems] == ["refused"]
    assert [p.kind for p in burst.tally(jobs, predicted, Burst(b.submissions[1:], 1), queue, acct,
                                        hooked).problems] == ["unsubmitted"]
    assert set(burst.PROBLEMS) >= {p.kind for p in t.problems}


def test_rounds_combine_into_one_burst() -> None:
    jobs, predicted, b, queue, acct, hooked = _case()
    parts = []
    for k in range(3):
        sub = burst.Burst((b.submissions[k],), 0.5)
        parts.append(burst.BurstResult(jobs[k:k + 1], {k: predicted[k]}, sub,
                                       burst.tally(jobs[k:k + 1], predicted, sub, queue, acct, hooked), {},
                                       {"a100n1": "drained (x)"} if k == 1 else {}, 2.0))
    whole = burst.combine(parts)
    assert (whole.tally.submitted, whole.tally.refused, whole.tally.completed) == (2, 1, 2) and whole.tally.ok
    assert whole.burst.wall_s == 1.5 and whole.burst.rate == 2.0 and whole.drain_s == 6.0
    assert whole.jobs == jobs and dict(whole.predicted) == predicted
    assert dict(whole.tally.by_place) == {"batch/normal": 1, "interactive/debug": 1}
    assert whole.drained_after == {"a100n1": "drained (x)"}  # unusable after any round
