# SPDX-License-Identifier: Apache-2.0
"""A gpusub spot job preempted as it starts (the burst's bug, tests/lab/test_burst.py): under the lab's
``preempt_send_user_signal`` the preemption sends the job's ``--signal=B:USR2@...`` to the batch shell at
once; when it lands before bash has run the script's first line (its trap), bash dies of it. The window
is made wide with a slow ``BASH_ENV`` (what Lmod or a conda init on NFS does: bash sources it before the
script's first line), 30 s: the preemptor is scheduled well within it, even on the loaded VM (8 s was
too short once, at load 30). Measured on 22.05.8 without the controller-side rule: FAILED,
ExitCode 0:12, Reason=JobLaunchFailure, Restarts=0, the hook's log "leave: preemption: no checkpoint
directory"; the payload never ran.

With the lab's EpilogSlurmctld (slurm-gpu-epilog-ctld, lab/nodehooks.py) the job is requeued, runs again
once the preemptor is done and completes: Restarts=1, the payload ran once, to its end. The hook run a
second time for the first end (slurmctld reruns it after a restart) does nothing. On 24.11.5 (and later)
Slurm requeues such a job itself (release.py requeues_preempted_killed_by_signal): the same outcome, and
the hook leaves it.
Integration test (marker ``slurm``)."""

from __future__ import annotations

import os
import pwd
import re
import subprocess
import time

import pytest

from slurm_gpu.lab import clients
from slurm_gpu.lab.nodehooks import ctld_log, prefix
from slurm_gpu.slurm.release import spelling_for

pytestmark = pytest.mark.slurm

SLOW_ENV = "# a site's BASH_ENV, slow (bash sources it before the script's first line)\nsleep 30\n"
JOB = """#!/bin/bash
echo "run ${SLURM_RESTART_COUNT:-0}" >> runs.log
sleep 2
echo "done ${SLURM_RESTART_COUNT:-0}" >> runs.log
"""


def _text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except FileNotFoundError:
        return ""


def _record(conf: str, job_id: int) -> dict[str, str]:
    return next((f for f in clients.job_records(conf, job_id) if f.get("JobId") == str(job_id)), {})


def _hook_again(slurm_lab, job_id: int, work: str) -> subprocess.CompletedProcess[str]:
    """The lab's EpilogSlurmctld once more for the first run's end, as slurmctld would after a restart
    (SlurmUser, only the SLURM_JOB_* variables measured in the first run)."""
    shim = os.path.join(prefix(slurm_lab.paths.lab_dir), "epilog_ctld.sh")
    env = {"SLURM_JOB_ID": str(job_id), "SLURM_JOB_UID": str(pwd.getpwnam(slurm_lab.user).pw_uid),
           "SLURM_JOB_RESTART_COUNT": "0", "SLURM_JOB_PARTITION": "spot", "SLURM_JOB_WORK_DIR": work,
           "SLURM_JOB_EXIT_CODE": "12", "SLURM_JOB_EXIT_CODE2": "0:12", "SLURM_SCRIPT_CONTEXT": "epilog_slurmctld"}
    return subprocess.run(["runuser", "-u", "slurm", "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()),
                           "/bin/sh", shim, "--verbose"], capture_output=True, text=True, timeout=120, check=False)


def test_spot_job_preempted_before_its_first_line_is_requeued_and_completes(slurm_lab) -> None:
    from slurm_gpu.lab.demo import find_gpusub

    conf = slurm_lab.slurm_conf
    if not re.search(r"^EpilogSlurmctld=\S*epilog_ctld\.sh$", _text(conf), re.M):
        pytest.skip("the lab runs without the EpilogSlurmctld hook (SLURM_GPU_LAB_EPILOG_CTLD=0 or no node hooks)")
    gpusub = find_gpusub()
    assert gpusub, "gpusub is not installed"
    work = slurm_lab.workdir("preempted-at-start")
    for name, text, mode in (("slow-env.sh", SLOW_ENV, 0o644), ("job.sh", JOB, 0o755)):
        with open(os.path.join(work, name), "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(os.path.join(work, name), mode)
    node = "h100n1"
    done = slurm_lab.run([gpusub, "--parsable", "--class", "spot", "--gpus=h100:1", "-N", "1", "-w", node, "-t", "10",
                          "-o", "out.txt", "job.sh"], cwd=work, timeout_s=60,
                         env_extra={"GPUSUB_POLICY": slurm_lab.policy_path,
                                    "BASH_ENV": os.path.join(work, "slow-env.sh")})
    assert done.returncode == 0, done.stderr
    job_id = int(done.stdout.strip().split(";")[0])
    assert clients.wait_job(conf, job_id, {"RUNNING"}, 60) == "RUNNING"
    # the interactive partition's higher priority tier preempts spot: all 8 GPUs of the node, for 15 s
    clients.sbatch(["-p", "interactive", "--qos=normal", "--gpus=h100:8", "-N", "1", "-w", node, "-t", "5",
                    "-o", "/dev/null", "--wrap", "sleep 15"], conf, user=slurm_lab.user, cwd="/tmp")
    t0 = time.monotonic()
    rec: dict[str, str] = {}
    again = None
    # the requeued run is eligible ~11 s after the preemptor's end (cred_expire=10), then sources BASH_ENV too
    while time.monotonic() - t0 < 300:
        if again is None and _record(conf, job_id).get("Restarts") == "1":
            again = _hook_again(slurm_lab, job_id, work)  # slurmctld reran the hook for the first end
        rec = _record(conf, job_id)
        if rec.get("JobState") in clients.FINAL_STATES and rec.get("JobState") != "COMPLETING":
            if rec.get("JobState") != "FAILED" or time.monotonic() - t0 > 20:  # FAILED for good, not for a moment
                break
        time.sleep(1)
    log = _text(ctld_log(slurm_lab.paths.lab_dir))
    mine = [ln for ln in log.splitlines() if f" job {job_id} " in ln or f" job {job_id}:" in ln]
    out = _text(os.path.join(work, "out.txt"))
    assert (rec.get("JobState"), rec.get("Restarts")) == ("COMPLETED", "1"), (rec, mine, out)
    assert again is not None and again.returncode == 0, again
    # the second run of the hook for the first end does nothing, and the job runs once more, not twice
    assert any(f"job {job_id}: nothing to do: requeued already (restart count 0 -> 1" in ln for ln in mine), mine
    # the first run died before its first line; the second ran the payload once, to its end
    assert _text(os.path.join(work, "runs.log")).split("\n") == ["run 1", "done 1", ""]
    by_hook = any(": requeue: preemption: killed by SIGUSR2 (ExitCode 0:12) before its script's trap; requeued "
                  "(restart 1 of at most 3)" in ln for ln in mine)
    if spelling_for(slurm_lab.version).requeues_preempted_killed_by_signal:
        # 24.11, 26.05: Slurm requeues it itself; the hook does not requeue it again (24.11.5 logs "leave:
        # preemption"; 26.05.5 logged nothing of the first end before the restart count moved)
        assert not by_hook, mine
    else:
        assert by_hook, mine
    # both runs went through the node hooks: the killed one got its Epilog too (where MIG/MPS are restored)
    hooks = _text(os.path.join(prefix(slurm_lab.paths.lab_dir), "log", "node-hooks.log"))
    for hook in ("prolog", "epilog"):
        runs = re.findall(rf"^\S+ slurm-gpu-{hook}\[[0-9]+\]: job {job_id}: {hook}: .*$", hooks, re.M)
        assert len(runs) == 2, (hook, runs)
    print(f"preempted at start: job {job_id} requeued by {'the hook' if by_hook else 'Slurm'} and COMPLETED "
          f"(Restarts=1) "
          f"{time.monotonic() - t0:.0f} s after the preemptor's submission")
