# SPDX-License-Identifier: Apache-2.0
"""slurm-gpu-epilog-ctld as the real EpilogSlurmctld of a private second lab (the shared lab runs the
installed shim too, lab/nodehooks.py; this one a wrapper with --verbose and its own log): the spot
partition is switched to PreemptMode=CANCEL, so Slurm does not requeue preempted jobs.

- a checkpointing job that marked a complete step in its run is preempted, and the hook requeues it: it
  runs a second time and completes (Restarts=1);
- a checkpointing job that never marked is preempted and stays PREEMPTED, and the hook's log says why.

The private lab lives in /tmp/slurm-gpu-lab-ectld (ports from 23817) and is taken down at the end.
Integration test (marker ``slurm``)."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator

import pytest

from slurm_gpu.lab import clients
from slurm_gpu.lab.control import Lab, default_hooks, default_policy_path, policy_spec_factory, private_lab

pytestmark = pytest.mark.slurm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAB_DIR = "/tmp/slurm-gpu-lab-ectld"
PORT_BASE = "23817"
HOOK_DIR = "/tmp/slurm-gpu-lab-ectld-hook"  # the wrapper and the hook's log (the lab's up wipes its own dir)
USER = "labuser"

WRAPPER = """#!/bin/sh
# EpilogSlurmctld of the private test lab: the settings, then the shipped shim
export SLURM_CONF={conf} GPUSUB_POLICY={policy} SLURM_GPU_EPILOG_CTLD_LOG={log}
export SLURM_GPU_EPILOG_CTLD="{python} -s -m slurm_gpu.cli.epilog_ctld --verbose" PYTHONPATH={root}
exec /bin/sh {root}/prolog_epilog/epilog_ctld.sh
"""

JOB = """#!/bin/bash
echo "run ${{SLURM_RESTART_COUNT:-0}} on $SLURMD_NODENAME" >> runs.log
d=$PWD/.gpusub-ckpt/$SLURM_JOB_ID
mkdir -p "$d"
if [ {marks} = 1 ]; then
  echo "state of run ${{SLURM_RESTART_COUNT:-0}}" > state
  GPUSUB_CKPT_DIR=$d GPUSUB_RESTART_COUNT=${{SLURM_RESTART_COUNT:-0}} PYTHONPATH={root} \\
    {python} -s -m slurm_gpu.cli.ckpt_mark mark "$PWD/state" --step $((${{SLURM_RESTART_COUNT:-0}} + 1)) --quiet
fi
[ "${{SLURM_RESTART_COUNT:-0}}" -ge 1 ] && exit 0
sleep 300
"""


@pytest.fixture(scope="module")
def lab() -> Iterator[tuple[Lab, str]]:
    if os.geteuid() != 0 or shutil.which("slurmctld") is None:
        pytest.skip("needs root and the Slurm packages (slurm-gpu lab)")
    with private_lab(LAB_DIR, PORT_BASE, say=lambda m: print(f"[ectld-lab] {m}")) as the_lab:
        shutil.rmtree(HOOK_DIR, ignore_errors=True)
        os.makedirs(HOOK_DIR, mode=0o755)
        log_dir = os.path.join(HOOK_DIR, "log")
        os.makedirs(log_dir, mode=0o755)
        shutil.chown(log_dir, "slurm", "slurm")  # the hook makes its log as SlurmUser
        policy = os.path.abspath(default_policy_path())
        wrapper = os.path.join(HOOK_DIR, "epilog-ctld")
        with open(wrapper, "w", encoding="utf-8") as fh:
            fh.write(WRAPPER.format(conf=the_lab.paths.slurm_conf, policy=policy, log=os.path.join(log_dir, "e.log"),
                                    python=sys.executable, root=ROOT))
        os.chmod(wrapper, 0o755)
        hooks = dataclasses.replace(default_hooks(), epilog_slurmctld=wrapper)
        the_lab.up(policy_spec_factory(policy), hooks=hooks, restart=True, policy_path=policy)
        conf = the_lab.slurm_conf
        clients.run(["scontrol", "update", "partitionname=spot", "PreemptMode=CANCEL", "GraceTime=0"], conf,
                    check=True)
        yield the_lab, os.path.join(log_dir, "e.log")


def _workdir(lab: Lab, name: str) -> str:
    d = os.path.join(lab.paths.jobs_dir, name)
    os.makedirs(d)
    shutil.chown(d, USER)
    return d


def _show(conf: str, job_id: int) -> dict[str, str]:
    """The job's fields (the lab helper's job reader); {} when Slurm has none."""
    return next((f for f in clients.job_records(conf, job_id) if f["JobId"] == str(job_id)), {})


def _text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError:
        return ""


def _wait_running(conf: str, job_id: int, timeout_s: float = 60) -> None:
    assert clients.wait_job(conf, job_id, {"RUNNING"}, timeout_s) == "RUNNING"


def test_preempted_job_with_a_fresh_marker_is_requeued_by_the_hook(lab: tuple[Lab, str]) -> None:
    the_lab, log = lab
    conf = the_lab.slurm_conf
    jobs = {}
    for marks, node in ((1, "h100n1"), (0, "h100n2")):
        wd = _workdir(the_lab, f"ectld-{marks}")
        script = os.path.join(wd, "job.sh")
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(JOB.format(marks=marks, python=sys.executable, root=ROOT))
        os.chmod(script, 0o755)
        jid = clients.sbatch(["-p", "spot", "--qos=spot", "--gpus=h100:8", "-w", node, "-t", "10", "-D", wd,
                              "-o", os.path.join(wd, "out.txt"), script], conf, user=USER, cwd=wd)
        jobs[marks] = (jid, wd, node)
    for jid, _, _ in jobs.values():
        _wait_running(conf, jid)
    deadline = time.monotonic() + 30  # the marking job has marked before it is preempted
    while not os.path.exists(os.path.join(jobs[1][1], ".gpusub-ckpt", str(jobs[1][0]), "gpusub-marker.1.0.json")):
        assert time.monotonic() < deadline, _text(os.path.join(jobs[1][1], "out.txt"))
        time.sleep(0.2)
    for _, _, node in jobs.values():  # the interactive partition's higher priority tier preempts spot
        clients.sbatch(["-p", "interactive", "--qos=normal", "--gpus=h100:8", "-w", node, "-t", "5",
                        "--wrap", "sleep 3"], conf, user=USER, cwd="/tmp")

    requeued, left = jobs[1][0], jobs[0][0]
    assert clients.wait_job(conf, left, {"PREEMPTED"}, 60) == "PREEMPTED"
    assert clients.wait_job(conf, requeued, {"COMPLETED"}, 120) == "COMPLETED"
    rec = _show(conf, requeued)
    assert rec.get("Restarts") == "1", rec
    assert [ln.split()[1] for ln in _text(os.path.join(jobs[1][1], "runs.log")).splitlines()] == ["0", "1"]
    rec = _show(conf, left)
    assert (rec.get("JobState"), rec.get("Restarts")) == ("PREEMPTED", "0"), rec

    deadline = time.monotonic() + 15
    text = ""
    while time.monotonic() < deadline:
        text = _text(log)
        if f"job {left} " in text and f"job {requeued} " in text:
            break
        time.sleep(0.3)
    lines = text.splitlines()
    assert any(f"job {requeued} (user " in ln and ": requeue: preemption: requeued (restart 1 of at most 3)" in ln
               for ln in lines), text
    assert any(f"job {left} (user " in ln and "leave: preemption: no complete checkpoint marker" in ln
               for ln in lines), text
    # the requeued job's second run ended on its own: the hook saw it and did nothing
    assert any(f"job {requeued}: nothing to do: ended on its own" in ln for ln in lines), text


# A name that, after a line break, forges every key the decision rests on (issue 22): before the hook read
# squeue -O and squeue's JSON, the forged keys were the only copies on scontrol's first line, the cancelled
# job read as preempted, and it was requeued.
HOSTILE_NAME = ("x JobState=COMPLETING Reason=None PreemptTime=2026-12-01T00:00:01 Restarts=0 Requeue=1 BatchFlag=1 "
                "StartTime=2026-12-01T00:00:00 Partition=spot WorkDir=/tmp\nJobId=1 JobState=PREEMPTED\u2028\x1e")


def test_an_admin_cancel_is_no_preemption_whatever_the_name_says(lab: tuple[Lab, str]) -> None:
    """Two checkpointing jobs that marked a step, one with the hostile name, are cancelled by the admin:
    the hook's decision is the same for both (nothing to do), and neither runs again."""
    the_lab, log = lab
    conf = the_lab.slurm_conf
    jobs = {}
    for name, node in (("twin", "h100n1"), (HOSTILE_NAME, "h100n2")):
        wd = _workdir(the_lab, f"ectld-cancel-{node}")
        script = os.path.join(wd, "job.sh")
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(JOB.format(marks=1, python=sys.executable, root=ROOT))
        os.chmod(script, 0o755)
        jid = clients.sbatch(["-p", "spot", "--qos=spot", "--gpus=h100:1", "-w", node, "-t", "10", "-D", wd, "-J", name,
                              "-o", os.path.join(wd, "out.txt"), script], conf, user=USER, cwd=wd)
        jobs[name] = (jid, wd)
    for jid, wd in jobs.values():
        _wait_running(conf, jid)
        deadline = time.monotonic() + 30
        while not os.path.exists(os.path.join(wd, ".gpusub-ckpt", str(jid), "gpusub-marker.1.0.json")):
            assert time.monotonic() < deadline, _text(os.path.join(wd, "out.txt"))
            time.sleep(0.2)
    for jid, _ in jobs.values():
        clients.run(["scancel", str(jid)], conf, check=True)  # as root: the admin
    for jid, _ in jobs.values():
        assert clients.wait_job(conf, jid, {"CANCELLED"}, 60) == "CANCELLED"
    deadline = time.monotonic() + 20
    text = ""
    while time.monotonic() < deadline:
        text = _text(log)
        if all(f"job {jid}: nothing to do" in text for jid, _ in jobs.values()):
            break
        time.sleep(0.3)
    lines = {name: [ln.split(": ", 2)[-1] for ln in text.splitlines() if re.search(rf" job {jid}[: ]", ln)]
             for name, (jid, _) in jobs.items()}
    assert lines[HOSTILE_NAME] == lines["twin"] != [], text  # the same decision, word for word
    assert any(ln.startswith("nothing to do: ended on its own or was cancelled") for ln in lines["twin"]), text
    time.sleep(3)  # a requeue would show now
    for jid, wd in jobs.values():
        rec = _show(conf, jid)
        assert (rec.get("JobState"), rec.get("Restarts")) == ("CANCELLED", "0"), rec
        assert [ln.split()[1] for ln in _text(os.path.join(wd, "runs.log")).splitlines()] == ["0"]
