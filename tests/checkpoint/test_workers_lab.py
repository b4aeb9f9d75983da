# SPDX-License-Identifier: Apache-2.0
"""A torchrun-style payload under the checkpoint protocol, in the real Slurm lab: one task whose launcher
starts several workers (RANK/WORLD_SIZE in their environment, as torchrun sets them). The launcher is
modelled on torchrun's signal handling (torch.distributed.elastic: it handles TERM, INT, HUP and QUIT by
passing them to its workers, and any other signal, USR2 included, ends it at once).

- In the batch script (the payload itself is the launcher): the stop signal reaches every worker; the
  launcher dies of it, and the script waits for the workers still saving before it decides, so the
  step they mark is complete (world size 3) when the decision is read.
- Under ``srun -n1`` (a step): with ``--ckpt-signal=HUP`` (a signal torchrun passes on) every worker gets
  it and marks. With USR2 the launcher, the step's only task, would die, and Slurm ends a step's other
  processes with its tasks (docs/checkpointing.md).
- A 2-node, 4-task step: every rank gets the signal exactly once and marks; a rank that does not mark
  within the grace time leaves the previous step the resume point.

Integration tests (marker ``slurm``)."""

from __future__ import annotations

import json
import os
import re
import sys
import time

import pytest

pytestmark = pytest.mark.slurm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKERS = 3

LAUNCHER = """#!{python}
import os, signal, subprocess, sys
n = int(sys.argv[1])
procs = [subprocess.Popen([sys.executable, {worker!r}],
                          env={{**os.environ, "RANK": str(i), "LOCAL_RANK": str(i), "WORLD_SIZE": str(n)}})
         for i in range(n)]
def forward(sig, frame):
    for p in procs:
        p.send_signal(sig)
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):  # as torchrun's agent
    signal.signal(s, forward)
print("launcher up", flush=True)
sys.exit(max(p.wait() for p in procs))
"""

WORKER = """import os, sys, time
sys.path.insert(0, {root!r})
from slurm_gpu import checkpoint as ckpt
ckpt.should_stop()
rank = int(os.environ["RANK"])
print(f"worker {{rank}} up", flush=True)
while not ckpt.should_stop():
    time.sleep(0.1)
print(f"worker {{rank}} got the stop signal", flush=True)
time.sleep(2 + rank)  # saving takes a while: the launcher may be gone by now
here = os.path.dirname(os.path.dirname(os.environ["GPUSUB_CKPT_DIR"]))
p = os.path.join(here, f"shard-{{rank}}")
with open(p, "w") as fh:
    fh.write(str(rank))
ckpt.mark(p, step=1)
print(f"worker {{rank}} saved", flush=True)
"""


def _write(path: str, text: str) -> str:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(path, 0o755)
    return path


def _run(slurm_lab, name: str, options: list[str], step: bool) -> tuple[str, str, int, str]:  # type: ignore[no-untyped-def]
    from slurm_gpu.lab.demo import find_gpusub

    exe = find_gpusub()
    assert exe is not None, "gpusub is not installed"
    work = slurm_lab.workdir(f"ckpt-workers-{name}")
    worker = _write(os.path.join(work, "worker.py"), WORKER.format(root=ROOT))
    launcher = _write(os.path.join(work, "launcher"), LAUNCHER.format(python=sys.executable, worker=worker))
    payload = launcher if not step else _write(os.path.join(work, "payload"),
                                               f"#!/bin/bash\nsrun -n1 {launcher} {WORKERS}\necho \"srun exit $?\"\n")
    done = slurm_lab.run([exe, "--checkpoint", "--ckpt-grace=30s", "-t", "5", "-o", "out.txt", *options, payload,
                          *([] if step else [str(WORKERS)])], cwd=work, timeout_s=60)
    assert done.returncode == 0, done.stderr
    m = re.search(r"Submitted batch job (\d+)", done.stdout)
    assert m, done.stdout
    job = int(m.group(1))
    out = os.path.join(work, "out.txt")
    try:
        slurm_lab.wait(job, {"RUNNING"}, timeout_s=120)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            text = ""
            if os.path.exists(out):
                with open(out, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
            if all(f"worker {r} up" in text for r in range(WORKERS)):
                break
            time.sleep(0.3)
        time.sleep(2.5)  # the protocol holds a stop in the payload's first 2 s (before it can handle it)
        signal = options[0].split("=")[1] if options else "USR2"
        # as an admin would (or Slurm's --signal): to the batch shell only; the script passes it on
        sent = slurm_lab.run(["scancel", f"--signal={signal}", "--batch", str(job)], timeout_s=20, as_root=True)
        assert sent.returncode == 0, sent.stderr
        state = slurm_lab.wait(job, timeout_s=120)
    finally:
        slurm_lab.cancel(job)
    with open(out, encoding="utf-8", errors="replace") as fh:
        return fh.read(), work, job, state


def _check_all_marked(log: str, work: str, job: int) -> None:
    for rank in range(WORKERS):
        assert f"worker {rank} got the stop signal" in log, log
        assert f"worker {rank} saved" in log, log
        with open(os.path.join(work, ".gpusub-ckpt", str(job), f"gpusub-marker.1.{rank}.json"), encoding="utf-8") as fh:
            m = json.load(fh)
        assert (m["rank"], m["world_size"]) == (rank, WORKERS), m
    from slurm_gpu.checkpoint.job import newest_step

    d = os.path.join(work, ".gpusub-ckpt", str(job))
    newest = newest_step({"GPUSUB_CKPT_DIR": d}, expected_uid=os.stat(d).st_uid)
    assert newest is not None and (newest.step, len(newest.markers)) == (1, WORKERS), newest
    # the script decided only after the last worker had saved
    assert log.rindex(f"worker {WORKERS - 1} saved") < log.rindex("gpusub-ckpt: not requeued"), log


def test_every_worker_of_a_batch_level_launcher_gets_the_signal_and_is_waited_for(slurm_lab) -> None:  # type: ignore[no-untyped-def]
    log, work, job, state = _run(slurm_lab, "batch", [], step=False)
    _check_all_marked(log, work, job)
    assert "the stop signal came from neither the time limit nor a preemption" in log, log
    assert state == "FAILED", log  # the launcher died of USR2 (as torchrun does): the job's exit code is its


def test_every_worker_of_a_launcher_in_a_step_gets_a_signal_it_passes_on(slurm_lab) -> None:  # type: ignore[no-untyped-def]
    log, work, job, state = _run(slurm_lab, "step", ["--ckpt-signal=HUP"], step=True)
    _check_all_marked(log, work, job)
    assert "launcher up" in log and "srun: forcing job termination" not in log, log  # srun itself is left alone


RANK_WORKER = """import os, signal, sys, time
sys.path.insert(0, {root!r})
from slurm_gpu import checkpoint as ckpt
rank = int(os.environ["SLURM_PROCID"])
here = os.path.dirname(os.path.dirname(os.environ["GPUSUB_CKPT_DIR"]))
got = []
def on_stop(sig, frame):
    got.append(sig)
    print(f"rank {{rank}} got SIG{{signal.Signals(sig).name[3:]}}", flush=True)
signal.signal(signal.SIGUSR2, on_stop)
def save(step):
    p = os.path.join(here, f"shard-{{step}}-{{rank}}")
    with open(p, "w") as fh:
        fh.write(str(step))
    ckpt.mark(p, step=step)
save(1)
print(f"rank {{rank}} up", flush=True)
while not got:
    time.sleep(0.1)
time.sleep(60 if rank == 3 else 0.5)  # rank 3 does not save within the grace time
save(2)
print(f"rank {{rank}} saved", flush=True)
"""


def test_every_rank_of_a_two_node_step_gets_the_signal_once_and_a_late_rank_keeps_the_old_step(slurm_lab) -> None:  # type: ignore[no-untyped-def]
    """2 nodes, 4 tasks: each rank gets the stop signal exactly once (from scancel; srun is left out of the
    payload's group signal) and marks step 2, but rank 3 not within the grace time: step 1 stays the
    resume point, every rank resuming from its own shard."""
    from slurm_gpu.checkpoint.job import newest_step
    from slurm_gpu.lab.demo import find_gpusub

    exe = find_gpusub()
    assert exe is not None, "gpusub is not installed"
    work = slurm_lab.workdir("ckpt-ranks")
    worker = _write(os.path.join(work, "worker.py"), RANK_WORKER.format(root=ROOT))
    payload = _write(os.path.join(work, "payload"), f"#!/bin/bash\nsrun {sys.executable} {worker}\n")
    done = slurm_lab.run([exe, "--checkpoint", "--ckpt-grace=10s", "-N", "2", "-n", "4", "--ntasks-per-node=2",
                          "-t", "5", "-o", "out.txt", payload], cwd=work, timeout_s=60)
    assert done.returncode == 0, done.stderr
    job = int(re.search(r"Submitted batch job (\d+)", done.stdout).group(1))  # type: ignore[union-attr]
    out = os.path.join(work, "out.txt")
    try:
        slurm_lab.wait(job, {"RUNNING"}, timeout_s=120)
        deadline = time.monotonic() + 60
        text = ""
        while time.monotonic() < deadline and not all(f"rank {r} up" in text for r in range(4)):
            time.sleep(0.3)
            if os.path.exists(out):
                with open(out, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
        time.sleep(2.5)
        sent = slurm_lab.run(["scancel", "--signal=USR2", "--batch", str(job)], timeout_s=20, as_root=True)
        assert sent.returncode == 0, sent.stderr
        slurm_lab.wait(job, timeout_s=120)
    finally:
        slurm_lab.cancel(job)
    with open(out, encoding="utf-8", errors="replace") as fh:
        log = fh.read()
    for rank in range(4):
        assert log.count(f"rank {rank} got SIGUSR2") == 1, log
    assert all(f"rank {r} saved" in log for r in range(3)) and "rank 3 saved" not in log, log
    assert "did not end within the grace time (10 s): SIGTERM" in log, log
    d = os.path.join(work, ".gpusub-ckpt", str(job))
    newest = newest_step({"GPUSUB_CKPT_DIR": d}, expected_uid=os.stat(d).st_uid)
    assert newest is not None and newest.step == 1, newest
    assert [newest.path_of(r) for r in range(4)] == [os.path.join(work, f"shard-1-{r}") for r in range(4)]
    hosts = {m.host for m in newest.markers}
    assert len(hosts) == 2, hosts
