# SPDX-License-Identifier: Apache-2.0
"""The stand-in nvidia-cuda-mps-control speaks the documented control commands."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

MPS = Path(__file__).resolve().parent / "bin" / "nvidia-cuda-mps-control"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def mps(tmp_path):
    env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=str(tmp_path / "pipe"), CUDA_MPS_LOG_DIRECTORY=str(tmp_path / "log"))
    started: list[int] = []

    def run(*args: str, stdin: str = "", timeout: float = 10, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(MPS), *args],
            input=stdin,
            env=dict(env, **extra),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def state() -> dict:
        data = json.loads((tmp_path / "pipe" / "standin-state.json").read_text())
        started.append(data["pid"])
        started.extend(data["servers"].values())
        return data

    run.state = state  # type: ignore[attr-defined]
    run.dir = tmp_path  # type: ignore[attr-defined]
    yield run
    for pid in started:  # only what this test started
        if alive(pid):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass  # it ended between the check and the kill (a CI race)


def wait_gone(pid: int, timeout: float = 5) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return False


def test_daemon_lifecycle(mps):
    assert mps("-d").returncode == 0
    daemon = mps.state()["pid"]
    assert alive(daemon)
    r = mps(
        stdin="get_default_active_thread_percentage\nset_default_active_thread_percentage 25\n"
        "get_default_active_thread_percentage\nstart_server -uid 1234\nget_server_list\n"
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:3] == ["100.0", "25.0", "25.0"]
    server = int(lines[3])
    assert alive(server)
    st = mps.state()
    assert (
        st["running"] is True and st["default_active_thread_percentage"] == 25.0 and st["servers"] == {"1234": server}
    )
    assert (mps.dir / "pipe" / "control").exists()
    assert "Command: start_server -uid 1234" in (mps.dir / "log" / "control.log").read_text()

    second = mps("-d")
    assert second.returncode == 1 and "already running" in second.stderr

    assert mps(stdin="quit\n").returncode == 0
    assert wait_gone(daemon) and not alive(server)
    assert mps.state()["running"] is False and not (mps.dir / "pipe" / "control").exists()
    gone = mps(stdin="get_server_list\n")
    assert gone.returncode == 1 and "Cannot find MPS control daemon" in gone.stderr


def test_bad_commands_and_usage(mps):
    assert mps("-x").returncode == 1
    assert mps("-d").returncode == 0
    mps.state()
    r = mps(
        stdin="set_default_active_thread_percentage 0\nset_default_active_thread_percentage abc\n"
        "start_server -uid x\nfrobnicate\n"
    )
    assert r.stdout.splitlines() == [
        "Invalid active thread percentage",
        "Invalid active thread percentage",
        "Usage: start_server -uid UID",
        "Unrecognized command: frobnicate",
    ]
    assert mps.state()["default_active_thread_percentage"] == 100.0
    assert mps(stdin="quit\n").returncode == 0


def test_refuse_quit_switch_leaves_the_daemon_running(mps):
    assert mps("-d", SLURM_GPU_MPS_STANDIN_FAIL="refuse_quit").returncode == 0
    daemon = mps.state()["pid"]
    assert mps(stdin="quit\n").returncode == 0
    assert not wait_gone(daemon, timeout=0.5)
    assert mps.state()["running"] is True


def test_hang_quit_switch_is_bounded_by_the_caller(mps):
    assert mps("-d", SLURM_GPU_MPS_STANDIN_FAIL="hang_quit").returncode == 0
    mps.state()
    with pytest.raises(subprocess.TimeoutExpired):
        mps(stdin="quit\n", timeout=1)
