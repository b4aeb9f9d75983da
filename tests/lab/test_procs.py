# SPDX-License-Identifier: Apache-2.0
"""Process helpers: pidfiles name exactly our processes; stop only those; zombies count as stopped."""

from __future__ import annotations

import os
import subprocess
import time

from slurm_gpu.lab import procs


def wait_until(pred, timeout_s=10):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return False


def test_start_detached_records_the_daemon_pid_and_stop_stops_it(tmp_path):
    pidfile = str(tmp_path / "sleep.pid")
    pid = procs.start_detached(["sleep", "60"], str(tmp_path / "sleep.log"), pidfile)
    try:
        assert procs.comm(pid) == "sleep"
        assert procs.pidfile_process(pidfile, "sleep") == pid
        assert os.getsid(pid) == pid  # own session: not killed with our terminal
        procs.stop_pidfile(pidfile, "sleep", say=lambda m: None)
        assert not procs.alive(pid) and not os.path.exists(pidfile)
    finally:
        if procs.alive(pid):
            os.kill(pid, 9)


def test_start_detached_returns_once_the_daemon_has_its_name(tmp_path):
    """The pid is the daemon by name as soon as start_detached returns (before, sh's child could still be
    sh or setsid under load, and the lab took MariaDB for dead: "mariadb died: no output")."""
    pids = []
    try:
        for i in range(10):
            pidfile = str(tmp_path / f"s{i}.pid")
            pids.append(procs.start_detached(["sleep", "60"], str(tmp_path / "s.log"), pidfile))
            assert procs.pidfile_process(pidfile, "sleep") == pids[-1]
    finally:
        for pid in pids:
            if procs.alive(pid):
                os.kill(pid, 9)
    t0 = time.monotonic()
    procs.start_detached(["true"], str(tmp_path / "t.log"), str(tmp_path / "t.pid"))  # exits at once
    assert time.monotonic() - t0 < 5  # no wait for a name it will never have


def test_pidfile_of_another_program_is_left_alone(tmp_path):
    pidfile = str(tmp_path / "x.pid")
    p = subprocess.Popen(["sleep", "60"])
    try:
        procs.write_pidfile(pidfile, p.pid)
        said = []
        procs.stop_pidfile(pidfile, "slurmctld", say=said.append)
        assert p.poll() is None, "a process with another name was killed"
        assert said and "not ours" in said[0]
        assert not os.path.exists(pidfile)
    finally:
        p.kill()
        p.wait()


def test_reused_pid_with_other_start_time_is_not_ours(tmp_path):
    pidfile = str(tmp_path / "x.pid")
    p = subprocess.Popen(["sleep", "60"])
    try:
        with open(pidfile, "w") as f:
            f.write(f"{p.pid} 1\n")  # same pid and name, different start time
        assert procs.pidfile_process(pidfile, "sleep") is None
    finally:
        p.kill()
        p.wait()


def test_zombie_counts_as_stopped():
    p = subprocess.Popen(["true"])
    assert wait_until(lambda: procs._stat_fields(p.pid) and procs._stat_fields(p.pid)[0] == "Z")
    assert procs._stat_fields(p.pid) is not None  # still in the process table
    assert not procs.alive(p.pid)
    p.wait()


def test_descendants_lists_the_whole_tree():
    p = subprocess.Popen(["bash", "-c", "sleep 60 & sleep 61 & wait"])
    try:
        # a forked child is "bash" until it has exec'd sleep: wait for both to be sleeps (seen under load)
        assert wait_until(lambda: sorted(procs.comm(c) for c in procs.descendants(p.pid)) == ["sleep", "sleep"])
    finally:
        for c in procs.descendants(p.pid):
            os.kill(c, 9)
        p.kill()
        p.wait()


def test_fake_gpu_fallback_targets_are_distinct_character_devices():
    """Without CAP_MKNOD the lab links /dev/nvidiaN to existing character devices; slurmd rejects
    anything else, and two GPUs on one device number would be one device."""
    import os
    import stat

    from slurm_gpu.lab.daemons import _distinct_char_devices

    targets = _distinct_char_devices(4)
    assert len(targets) == 4
    rdevs = [os.stat(t).st_rdev for t in targets]
    assert all(stat.S_ISCHR(os.stat(t).st_mode) for t in targets)
    assert len(set(rdevs)) == 4


def test_lab_refuses_a_planted_lab_dir(tmp_path):
    """Root writes daemon config into the lab dir: a symlink, or a dir others own or can write, is refused."""
    import os

    import pytest

    from slurm_gpu.errors import SlurmGpuError
    from slurm_gpu.lab.config import LabPaths
    from slurm_gpu.lab.control import Lab

    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "lab"
    link.symlink_to(target)
    with pytest.raises(SlurmGpuError, match="not a plain directory"):
        Lab(LabPaths(str(link)))._check_lab_dir()
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)
    with pytest.raises(SlurmGpuError, match="writable by others"):
        Lab(LabPaths(str(open_dir)))._check_lab_dir()
    fine = tmp_path / "fine"
    fine.mkdir(mode=0o755)
    os.chmod(fine, 0o755)
    Lab(LabPaths(str(fine)))._check_lab_dir()  # no error


def test_demo_never_writes_through_a_planted_symlink(tmp_path):
    """The demo copies the job script, as root, into the lab user's directory."""
    from slurm_gpu.lab.demo import _write_as_root_into

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    planted = tmp_path / "hello-gpu.sh"
    planted.symlink_to(victim)
    _write_as_root_into(str(planted), b"#!/bin/bash\necho hi\n")
    assert victim.read_text() == "precious\n"
    assert not planted.is_symlink() and planted.read_bytes() == b"#!/bin/bash\necho hi\n"
    assert planted.stat().st_mode & 0o777 == 0o755
