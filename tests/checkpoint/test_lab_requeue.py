# SPDX-License-Identifier: Apache-2.0
"""The checkpoint protocol's rendered script under the real Slurm lab (22.05 here): a training-like payload
(a counter; it marks every N steps and on the stop signal, and resumes from the newest complete step)

- given a time limit shorter than its work, requeues itself at each time-limit stop and ends with the
  exact counter of an uninterrupted run;
- with max_requeues = 2 (a copy of the lab policy), stops after 2 requeues and says why;
- a payload that never marks is not requeued at its time limit, and says why;
- in the preemptible spot partition, preempted 5 times by batch-partition jobs (R4), it saves on each signal,
  requeues itself and finishes with the exact counter.

The time-limit jobs run side by side (-t 1 and --signal=B:USR2@50: Slurm sends the signal at its first
30 s check, so each run lasts 0-30 s; a requeued job is eligible again after ~11 s, cred_expire=10).
Integration tests (marker ``slurm``)."""

from __future__ import annotations

import os
import re
import sys

import pytest

pytestmark = pytest.mark.slurm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DT = 0.2  # seconds per counter step

TRAIN = """#!{python}
import os, sys, time
sys.path.insert(0, {root!r})
from slurm_gpu import checkpoint as ckpt
total, every = int(sys.argv[1]), int(sys.argv[2])
ckpt.should_stop()
here = os.path.dirname(os.path.dirname(os.environ["GPUSUB_CKPT_DIR"]))
path = os.environ.get("GPUSUB_RESUME_FROM")
counter = int(open(path).read()) if path else 0
print(f"start restart={{os.environ['GPUSUB_RESTART_COUNT']}} counter={{counter}}", flush=True)
while counter < total:
    time.sleep({dt})
    counter += 1
    print(f"at {{counter}}", flush=True)
    stop = ckpt.should_stop()
    if counter % every == 0 or stop:
        p = os.path.join(here, f"state-{{counter}}")
        with open(p + ".tmp", "w") as fh:
            fh.write(str(counter))
        os.replace(p + ".tmp", p)
        ckpt.mark(p, step=counter)
        print(f"saved {{counter}}", flush=True)
        if stop:
            print(f"stopping at {{counter}}", flush=True)
            sys.exit(0)
print(f"done counter={{counter}}", flush=True)
"""

NEVER_MARKS = """#!/bin/bash
trap 'echo "got the stop signal; not saving"; exit 0' USR2
echo "start restart=$GPUSUB_RESTART_COUNT"
while :; do sleep 1; done
"""

# A step whose srun runs in a session of its own: only scancel --signal (not the payload's process
# group, not srun's forwarding) can reach its tasks.
STEPS = """#!/bin/bash
trap 'echo "payload got USR2"' USR2
setsid srun -n2 bash -c 'trap "echo task $SLURM_PROCID got USR2; exit 0" USR2; echo task $SLURM_PROCID up
while :; do sleep 0.2 || :; done' &
wait $!; wait $!
echo "payload done"
"""


def _policy_copy(slurm_lab, max_requeues: int) -> str:
    """The lab policy with another max_requeues, in a work directory of its own (topology paths made
    absolute: the lab's policy-files directory is the lab's to rewrite)."""
    with open(slurm_lab.policy_path, encoding="utf-8") as fh:
        text = fh.read()
    text, n = re.subn(r"(?m)^(\s*max_requeues:\s*)\d+", rf"\g<1>{max_requeues}", text)
    assert n == 1, "the lab policy has no defaults.max_requeues line"
    here = os.path.dirname(slurm_lab.policy_path)
    text = re.sub(r"(?m)^(\s*topology:\s*)(?!/)(\S+)", lambda m: m.group(1) + os.path.normpath(
        os.path.join(here, m.group(2))), text)
    path = os.path.join(slurm_lab.workdir("ckpt-policy"), f"max-requeues-{max_requeues}.yaml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(path, 0o644)
    return path


def _gpusub(slurm_lab, work: str, policy: str, argv: list[str]) -> int:
    from slurm_gpu.lab.demo import find_gpusub

    exe = find_gpusub()
    assert exe is not None, "gpusub is not installed"
    done = slurm_lab.run([exe, *argv], cwd=work, env_extra={"GPUSUB_POLICY": policy}, timeout_s=60)
    assert done.returncode == 0, done.stderr
    m = re.search(r"Submitted batch job (\d+)", done.stdout)
    assert m, done.stdout
    return int(m.group(1))


def _write(work: str, name: str, text: str) -> str:
    path = os.path.join(work, name)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(path, 0o755)
    return path


def _log(work: str) -> str:
    with open(os.path.join(work, "out.txt"), encoding="utf-8", errors="replace") as fh:
        return fh.read()


def _runs(log: str) -> list[tuple[int, int]]:
    """(GPUSUB_RESTART_COUNT, counter at start) of each run, from the payload's own log."""
    return [(int(r), int(c)) for r, c in re.findall(r"(?m)^start restart=(\d+) counter=(\d+)$", log)]


def _check_resumes(log: str) -> None:
    """Each run starts at the counter the previous one saved last: no work redone, none skipped."""
    runs = _runs(log)
    chunks = re.split(r"(?m)^start restart=", log)[1:]
    for k in range(1, len(runs)):
        saved = [int(s) for s in re.findall(r"(?m)^saved (\d+)$", chunks[k - 1])]
        reached = [int(s) for s in re.findall(r"(?m)^at (\d+)$", chunks[k - 1])]
        assert saved, f"run {k} saved nothing:\n{log}"
        assert runs[k][1] == saved[-1], f"run {k + 1} resumed at {runs[k][1]}, not {saved[-1]}:\n{log}"
        assert max(reached) - saved[-1] <= 0, f"run {k} reached {max(reached)} after its last save {saved[-1]}"


def _restarts(slurm_lab, job: int) -> int:
    fields, _ = slurm_lab.show_job(job)
    return int(fields.get("Restarts", "-1"))


@pytest.fixture(scope="module")
def time_limit_jobs(slurm_lab):
    """Three jobs submitted together: work > one run (max_requeues 6), endless work (max 2), never marks."""
    policies = [_policy_copy(slurm_lab, 6), _policy_copy(slurm_lab, 2)]
    common = ["--checkpoint", "--ckpt-grace=15s", "--signal=B:USR2@50", "-G", "h100:1", "-t", "1", "-o", "out.txt"]
    jobs: dict[str, tuple[int, str]] = {}
    try:
        for name, policy, script, options, args in (
            ("finishes", policies[0], TRAIN, [], ["175", "25"]),
            ("capped", policies[1], TRAIN, [], ["100000", "25"]),
            ("never-marks", policies[0], NEVER_MARKS, [], []),
            ("steps", policies[0], STEPS, ["-n2", "-t", "2", "--signal=B:USR2@60"], []),  # the signal 30-60 s in
        ):
            work = slurm_lab.workdir(f"ckpt-{name}")
            text = script.format(python=sys.executable, root=ROOT, dt=DT) if script is TRAIN else script
            path = _write(work, "payload", text)
            jobs[name] = (_gpusub(slurm_lab, work, policy, [*common, *options, path, *args]), work)
        yield jobs
    finally:
        slurm_lab.cancel(*(job for job, _ in jobs.values()))
        for p in policies:
            os.unlink(p)  # the work directory stays, as every lab test's does


def test_time_limit_requeues_until_the_work_is_done(slurm_lab, time_limit_jobs) -> None:
    job, work = time_limit_jobs["finishes"]
    state = slurm_lab.wait(job, timeout_s=400)
    log = _log(work)
    assert state == "COMPLETED", log
    assert re.search(r"(?m)^done counter=175$", log), log
    runs = _runs(log)
    assert len(runs) >= 2, f"the work (35 s) fit in one run of at most 30 s?\n{log}"
    assert [r for r, _ in runs] == list(range(len(runs))), log  # GPUSUB_RESTART_COUNT 0, 1, 2, ...
    _check_resumes(log)
    assert log.count("requeueing after the time-limit stop") == len(runs) - 1, log
    assert _restarts(slurm_lab, job) == len(runs) - 1


def test_time_limit_requeues_stop_at_max_requeues_with_the_reason(slurm_lab, time_limit_jobs) -> None:
    job, work = time_limit_jobs["capped"]
    state = slurm_lab.wait(job, timeout_s=400)
    log = _log(work)
    assert state == "COMPLETED", log  # the payload's own exit code: 0 after saving
    assert [r for r, _ in _runs(log)] == [0, 1, 2], log
    _check_resumes(log)
    assert ("gpusub-ckpt: not requeued after the time-limit stop: the job has been restarted 2 times, the "
            "policy's maximum (max_requeues=2)") in log, log
    assert _restarts(slurm_lab, job) == 2


def test_a_payload_that_never_marks_is_not_requeued_and_says_why(slurm_lab, time_limit_jobs) -> None:
    job, work = time_limit_jobs["never-marks"]
    state = slurm_lab.wait(job, timeout_s=200)
    log = _log(work)
    assert state == "COMPLETED", log
    assert log.count("start restart=0") == 1 and "start restart=1" not in log, log
    assert "got the stop signal; not saving" in log
    assert ("gpusub-ckpt: not requeued at the time limit: no checkpoint was marked since this run started"
            in log), log
    assert _restarts(slurm_lab, job) == 0


def test_the_stop_reaches_every_task_of_a_running_step(slurm_lab, time_limit_jobs) -> None:
    job, work = time_limit_jobs["steps"]
    state = slurm_lab.wait(job, timeout_s=200)
    log = _log(work)
    assert state == "COMPLETED", log
    for line in ("task 0 up", "task 1 up", "payload got USR2", "task 0 got USR2", "task 1 got USR2", "payload done"):
        assert re.search(rf"(?m)^{line}$", log), f"{line!r} missing:\n{log}"
    assert "gpusub-ckpt: not requeued at the time limit: no checkpoint was marked" in log


PREEMPTIONS = 5


def _log_so_far(work: str) -> str:
    """The log while the job runs: nothing yet until slurmstepd has made the file."""
    try:
        return _log(work)
    except FileNotFoundError:
        return ""


def _current_run(log: str) -> str:
    return re.split(r"(?m)^start restart=", log)[-1] if "start restart=" in log else ""


def test_r4_five_preemptions_resume_exactly(slurm_lab) -> None:
    """R4: class spot (checkpoint_required) on a100n1's four GPUs, preempted 5 times by batch-partition
    jobs that need them (partition_prio). The lab's spot GraceTime is 120 s; preempt_send_user_signal sends
    the batch shell --signal's USR2 at once: the payload saves, and the script requeues the job. It ends
    with exactly the counter of an uninterrupted run, GPUSUB_RESTART_COUNT reaches 5, and the work redone
    after each preemption, read from the payload's own log, is at most one checkpoint interval."""
    import time

    every = 10
    work = slurm_lab.workdir("ckpt-preempt")
    policy = _policy_copy(slurm_lab, 8)  # the lab policy's max_requeues (3) would stop it at 3
    path = _write(work, "payload", TRAIN.format(python=sys.executable, root=ROOT, dt=0.1))
    job = _gpusub(slurm_lab, work, policy,
                  ["--class", "spot", "--gres=gpu:a100:4", "-w", "a100n1", "-t", "10", "-o", "out.txt", path,
                   "600", str(every)])
    preemptors: list[int] = []
    try:
        for k in range(PREEMPTIONS):
            slurm_lab.wait(job, {"RUNNING"}, timeout_s=180)
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:  # this run is up and has done a checkpoint interval's work
                run = _current_run(_log_so_far(work))
                m = re.match(r"(\d+) counter=(\d+)", run)
                reached = [int(x) for x in re.findall(r"(?m)^at (\d+)$", run)]
                if m and int(m.group(1)) >= k and reached and max(reached) >= int(m.group(2)) + every:
                    break
                time.sleep(0.3)
            else:
                raise AssertionError(f"run {k} made no progress:\n{_log_so_far(work)}")
            preemptors.append(slurm_lab.sbatch(
                ["-p", "batch", "--qos=normal", "--gres=gpu:a100:4", "-w", "a100n1", "-t", "1",
                 "-o", os.path.join(work, f"preemptor-{k}.txt"), "--wrap", "sleep 1"], cwd=work))
            assert slurm_lab.wait(preemptors[-1], timeout_s=240) == "COMPLETED", _log(work)
        state = slurm_lab.wait(job, timeout_s=300)
        log = _log(work)
        assert state == "COMPLETED", log
        assert re.search(r"(?m)^done counter=600$", log), log  # the counter of an uninterrupted run
        assert log.count("(reason: preemption) passed on to the payload") >= PREEMPTIONS, log
        runs = _runs(log)
        assert [r for r, _ in runs] == list(range(len(runs))) and runs[-1][0] >= PREEMPTIONS, log
        # 22.05 leaves a job that ends during the grace time COMPLETED: every rerun is our own requeue.
        # 24.11 requeues such a job itself (slurm-lab.md), so a run may start that only resumes from the
        # last step and ends at once: the counter stays exact, no work is redone.
        requeues = log.count("requeueing after the preemption stop")
        if slurm_lab.version < (24, 11, 0):  # measured: 22.05.8 and 24.11.5
            assert requeues == len(runs) - 1, log
        else:
            assert PREEMPTIONS <= requeues <= len(runs) - 1, log
        chunks = re.split(r"(?m)^start restart=", log)[1:]
        for k in range(1, len(runs)):  # redone work: the previous run's furthest step minus this resume point
            reached = [int(s) for s in re.findall(r"(?m)^at (\d+)$", chunks[k - 1])] or [runs[k - 1][1]]
            assert 0 <= max(reached) - runs[k][1] <= every, f"run {k} redid {max(reached) - runs[k][1]} steps:\n{log}"
        _check_resumes(log)  # with a save on the signal: none redone, none skipped
    finally:
        slurm_lab.cancel(job, *preemptors)
        os.unlink(policy)
