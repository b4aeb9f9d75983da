# SPDX-License-Identifier: Apache-2.0
"""should_stop(): the stop signal sent to our own process, the lazy handler, chaining, the configured
signal; and a training-loop-like child process that checkpoints, marks and stops on the signal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurm_gpu.checkpoint import job


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("GPUSUB_CKPT_SIGNAL", raising=False)
    job._reset()
    yield
    job._reset()


def send(sig: signal.Signals) -> None:
    os.kill(os.getpid(), sig)
    time.sleep(0.01)  # the Python-level handler runs at the next bytecode boundary; give it one


def test_should_stop_turns_true_on_sigusr2() -> None:
    before = signal.getsignal(signal.SIGUSR2)
    assert job.should_stop() is False  # installs the handler
    assert signal.getsignal(signal.SIGUSR2) is not before
    assert job.should_stop() is False
    send(signal.SIGUSR2)
    assert job.should_stop() is True
    assert job.should_stop() is True  # stays true
    job._reset()
    assert signal.getsignal(signal.SIGUSR2) == before  # the replaced handler is back


def test_a_previous_python_handler_is_chained() -> None:
    seen: list[int] = []
    previous = signal.signal(signal.SIGUSR2, lambda signum, frame: seen.append(signum))
    try:
        assert job.should_stop() is False
        send(signal.SIGUSR2)
        assert job.should_stop() is True and seen == [signal.SIGUSR2]
    finally:
        job._reset()
        signal.signal(signal.SIGUSR2, previous)


def test_the_signal_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUSUB_CKPT_SIGNAL", "SIGUSR1")
    previous = signal.getsignal(signal.SIGUSR1)
    seen: list[int] = []
    signal.signal(signal.SIGUSR1, lambda signum, frame: seen.append(signum))  # keep USR2 out of the picture
    try:
        assert job.should_stop() is False
        send(signal.SIGUSR1)
        assert job.should_stop() is True and seen == [signal.SIGUSR1]
    finally:
        job._reset()
        signal.signal(signal.SIGUSR1, previous)


def test_a_bad_signal_name_warns_and_uses_usr2(monkeypatch: pytest.MonkeyPatch,
                                               caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("GPUSUB_CKPT_SIGNAL", "KILL")
    assert job.should_stop() is False
    assert "GPUSUB_CKPT_SIGNAL='KILL' is not a stop signal" in caplog.text
    send(signal.SIGUSR2)
    assert job.should_stop() is True


def test_outside_the_main_thread_it_cannot_install(caplog: pytest.LogCaptureFixture) -> None:
    out: list[bool] = []
    t = threading.Thread(target=lambda: out.append(job.should_stop()))
    t.start()
    t.join(10)
    assert out == [False] and "cannot install the SIGUSR2 handler" in caplog.text
    assert job.should_stop() is False  # the main thread can, later


def test_a_mark_after_the_signal_records_the_checkpoint_cost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUSUB_CKPT_DIR", str(tmp_path))
    for name in ("RANK", "WORLD_SIZE", "SLURM_STEP_ID"):
        monkeypatch.delenv(name, raising=False)
    assert job.mark("/ck/1", step=1).cost_s is None  # no signal yet: unknown
    job.should_stop()
    send(signal.SIGUSR2)
    time.sleep(0.2)  # "saving"
    cost = job.mark("/ck/2", step=2).cost_s
    assert cost is not None and 0.2 <= cost < 5
    assert job.mark("/ck/3", step=3, cost_s=1.5).cost_s == 1.5  # a given cost wins


LOOP = textwrap.dedent("""
    import sys, time
    from slurm_gpu import checkpoint as ckpt
    start = ckpt.resume_path()
    step = int(start.rsplit("-", 1)[1]) + 1 if start else 0
    ckpt.should_stop()
    print("ready", step, flush=True)
    while step < 100000:
        time.sleep(0.002)
        stop = ckpt.should_stop()
        if step % 50 == 0 or stop:
            ckpt.mark(f"/ck/step-{step}", step=step)
            if stop:
                print("stopped", step, flush=True)
                sys.exit(0)
        step += 1
""")


def test_a_training_loop_stops_on_the_signal_and_resumes(tmp_path: Path) -> None:
    env = {**os.environ, "GPUSUB_CKPT_DIR": str(tmp_path), "PYTHONPATH": str(Path(job.__file__).parents[2])}
    for name in ("RANK", "WORLD_SIZE", "SLURM_STEP_ID"):
        env.pop(name, None)
    stops = []
    for run in range(2):
        p = subprocess.Popen([sys.executable, "-c", LOOP], env={**env, "GPUSUB_RESTART_COUNT": str(run)},
                             stdout=subprocess.PIPE, text=True)
        assert p.stdout is not None
        ready = p.stdout.readline().split()
        assert ready[0] == "ready" and int(ready[1]) == (0 if run == 0 else stops[-1] + 1)
        time.sleep(0.3)
        p.send_signal(signal.SIGUSR2)
        out, _ = p.communicate(timeout=30)
        assert p.returncode == 0, out
        stops.append(int(out.split()[1]))
    status = subprocess.run([sys.executable, "-m", "slurm_gpu.cli.ckpt_mark", "status", "--dir", str(tmp_path)],
                            env=env, capture_output=True, text=True, timeout=30, check=True)
    complete = json.loads(status.stdout)["complete"]
    assert complete[0]["step"] == stops[1] and complete[0]["restart_count"] == 1
    assert complete[0]["cost_s"] is not None  # the checkpoint made on the signal knows its cost
    assert len(complete) == 3  # GPUSUB_CKPT_KEEP's default
