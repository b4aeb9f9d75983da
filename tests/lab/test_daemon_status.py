# SPDX-License-Identifier: Apache-2.0
"""Which lab daemon failed, and why: the last error line of its log, the first dead daemon in start order
(not the client that timed out), over real pidfiles and real processes in a lab directory; plus the
loopback-only config and the client waits scaled to the machine (issue 21)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from slurm_gpu.adapters.slurm.runner import CLIENT_WAIT, ClientWait, attempt_s, is_read_only, load_scale
from slurm_gpu.errors import SlurmGpuError, SlurmUnreachable
from slurm_gpu.lab import procs
from slurm_gpu.lab.config import LabPaths, LabRuntime, slurm_conf, slurmdbd_conf
from slurm_gpu.lab.daemons import DaemonStatus, LabDaemons, blame, last_error_line, why_dead

# slurmdbd 22.05.8's log in a namespace with only 127.0.0.1 and ::1 (docs/lab.md, "The suite on every release")
DBD_LOOPBACK_LOG = """\
[2026-12-01T10:00:00.101] accounting_storage/as_mysql: _check_mysql_concat_is_sane: MySQL server version is: 10.11.6
[2026-12-01T10:00:00.350] slurmdbd version 22.05.8 started
[2026-12-01T10:00:00.351] error: slurm_set_addr: Unable to resolve "(null)"
[2026-12-01T10:00:00.351] error: Error creating slurm stream socket: Address family not supported by protocol
[2026-12-01T10:00:00.351] fatal: slurm_init_msg_engine_port error Address family not supported by protocol
"""
SYMPTOM = "sacctmgr gave no answer within 30 s; is slurmctld up? (SLURM_CONF=/tmp/lab/etc/slurm.conf)"


def test_last_error_line_prefers_the_fatal_line_and_drops_the_timestamp():
    assert last_error_line(DBD_LOOPBACK_LOG) == (
        "fatal: slurm_init_msg_engine_port error Address family not supported by protocol")


def test_last_error_line_takes_the_last_error_without_a_fatal_one_and_skips_pmix():
    text = ("[t] slurmd version 22.05.8 started\n[t] error: first\n"
            "[t] error: Couldn't find the specified plugin name for mpi/pmix\n"
            "[t] error: the real one\n[t] error: mpi/pmix_v4: init: (null) [0]: mpi_pmix.c:193: pmi/pmix: "
            "can not load PMIx library\n[t] slurmd: done\n")
    assert last_error_line(text) == "error: the real one"
    assert last_error_line("[t] slurmdbd version 22.05.8 started\n") == ""
    # an error before the last start line is an old warning, not why the daemon stopped
    stopped = ("[t] error: Database settings not recommended values: innodb_buffer_pool_size\n"
               "[t] slurmdbd version 22.05.8 started\n[t] Terminate signal (SIGINT or SIGTERM) received\n")
    assert last_error_line(stopped) == ""
    assert why_dead(stopped) == "Terminate signal (SIGINT or SIGTERM) received"
    assert why_dead(DBD_LOOPBACK_LOG) == last_error_line(DBD_LOOPBACK_LOG)
    assert last_error_line("2026-12-01 10:00:00 0 [ERROR] InnoDB: Unable to lock ./ibdata1\n") == (
        "2026-12-01 10:00:00 0 [ERROR] InnoDB: Unable to lock ./ibdata1")


def test_blame_names_the_first_dead_daemon_not_the_client():
    statuses = [DaemonStatus("munged", True, True), DaemonStatus("mariadb", True, True),
                DaemonStatus("slurmdbd", True, False, last_error_line(DBD_LOOPBACK_LOG)),
                DaemonStatus("slurmctld", True, False, "error: slurmdbd: Connection refused"),
                DaemonStatus("slurmd.h100n1", False, False)]
    line = blame(statuses, SYMPTOM)
    assert line.startswith("slurmdbd died: fatal: slurm_init_msg_engine_port error Address family not supported")
    assert "is slurmctld up" not in line.split("(while:")[0]


def test_blame_keeps_a_line_that_already_names_the_dead_daemon():
    line = "mariadb died: [ERROR] Aborting (logs in /tmp/lab/log)"
    assert blame([DaemonStatus("mariadb", True, False, "[ERROR] Aborting")], line) == line


def test_blame_keeps_the_symptom_when_every_started_daemon_lives():
    statuses = [DaemonStatus("slurmdbd", True, True, "error: an old one"), DaemonStatus("slurmctld", False, False)]
    assert blame(statuses, SYMPTOM) == SYMPTOM


def _fake_daemon(tmp_path: Path, comm: str) -> subprocess.Popen[bytes]:
    """A real process whose name is ``comm`` (a copy of sleep), as the pidfile check wants."""
    exe = tmp_path / comm
    shutil.copy(shutil.which("sleep") or "/bin/sleep", exe)
    return subprocess.Popen([str(exe), "60"])


def test_daemon_statuses_over_real_pidfiles_and_logs(tmp_path: Path):
    paths = LabPaths(str(tmp_path / "lab"))
    for d in (paths.pid_dir, paths.log_dir):
        os.makedirs(d)
    d = LabDaemons(paths, say=lambda _line: None)
    Path(paths.lab_dir, "nodes").write_text("n1\n")
    ctld = _fake_daemon(tmp_path, "slurmctld")
    dbd = _fake_daemon(tmp_path, "slurmdbd")
    try:
        procs.write_pidfile(os.path.join(paths.pid_dir, "slurmctld.pid"), ctld.pid)
        procs.write_pidfile(os.path.join(paths.pid_dir, "slurmdbd.pid"), dbd.pid)
        Path(paths.log_dir, "slurmdbd.log").write_text(DBD_LOOPBACK_LOG)
        Path(paths.log_dir, "slurmctld.log").write_text("[t] slurmctld version 22.05.8 started\n")
        by_name = {st.name: st for st in d.daemon_statuses()}
        assert by_name["slurmdbd"].alive and by_name["slurmctld"].alive
        assert not by_name["slurmd.n1"].started and not by_name["mariadb"].started
        assert d.blame(SlurmUnreachable(SYMPTOM)).args[0] == SYMPTOM  # all alive: the client's own line
        dbd.kill()
        dbd.wait()
        by_name = {st.name: st for st in d.daemon_statuses()}
        assert not by_name["slurmdbd"].alive and by_name["slurmctld"].alive
        err = d.blame(SlurmUnreachable(SYMPTOM))
        assert isinstance(err, SlurmGpuError)
        assert str(err).startswith("slurmdbd died: fatal: slurm_init_msg_engine_port error Address family")
        assert paths.log_dir in str(err)
        with pytest.raises(SlurmGpuError, match=r"^slurmdbd died: fatal: slurm_init_msg_engine_port"):
            d._check_alive("slurmdbd", "slurmdbd", "slurmdbd.stdout")
    finally:
        for p in (ctld, dbd):
            p.kill()
            p.wait()


def test_loopback_only_enables_ipv6_in_both_configs_and_names_127_0_0_1():
    from tests.lab.test_config import SPEC

    plain = LabRuntime(version=(22, 5, 8), hostname="h", paths=LabPaths("/tmp/x"))
    loop = LabRuntime(version=(22, 5, 8), hostname="h", paths=LabPaths("/tmp/x"), loopback_only=True)
    assert "CommunicationParameters" not in slurm_conf(SPEC, plain) + slurmdbd_conf(plain)
    assert "AccountingStorageHost=localhost\n" in slurm_conf(SPEC, plain)
    assert "CommunicationParameters=EnableIPv6\n" in slurm_conf(SPEC, loop)
    assert "CommunicationParameters=EnableIPv6\n" in slurmdbd_conf(loop)
    assert "AccountingStorageHost=127.0.0.1\n" in slurm_conf(SPEC, loop)


@pytest.mark.parametrize(("load", "cpus", "scale"), [(0.0, 2, 1.0), (1.0, 2, 1.0), (4.0, 2, 2.0), (6.0, 2, 3.0),
                                                     (40.0, 2, 4.0), (4.0, 16, 1.0), (3.0, 0, 3.0)])
def test_load_scale(load: float, cpus: int, scale: float):
    assert load_scale(load, cpus) == scale


def test_attempt_bound_never_below_the_floor_the_flake_needed():
    # the flake: squeue gave no answer within 5 s at load 4 on 2 CPUs; no lab attempt waits that little now
    assert attempt_s(5.0) >= CLIENT_WAIT.floor_s > 5.0
    idle = ClientWait(max_scale=1.0)  # the scale at load <= 1 per CPU, whatever this machine's load now
    assert attempt_s(3.0, probe=True, wait=idle) == 3.0  # a probe is quick: scaled only, no floor
    assert attempt_s(3.0, wait=idle) == idle.floor_s
    assert attempt_s(1.0, wait=ClientWait(floor_s=0.5, max_scale=1.0)) == 1.0


@pytest.mark.parametrize(("argv", "read_only"), [
    (["squeue", "-h", "-j", "1"], True), (["/usr/bin/sinfo", "-N"], True), (["scontrol", "-o", "show", "job"], True),
    (["scontrol", "ping"], True), (["sacctmgr", "-nP", "show", "qos"], True),
    (["sbatch", "--parsable", "x.sh"], False), (["scancel", "1"], False), (["sacctmgr", "-i", "add", "qos"], False),
    (["scontrol", "update", "jobid=1"], False), (["srun", "true"], False)])
def test_only_read_only_queries_are_asked_again(argv: list[str], read_only: bool):
    assert is_read_only(argv) is read_only


def test_package_sets_by_purpose():
    from slurm_gpu.lab.install import PACKAGE_SETS, PACKAGES, packages_of

    demo = packages_of(("demo",))
    assert "slurmctld" in demo and "mariadb-server" in demo
    # the demo installs the stand-in NVML's compiler (its a100mig1 slices are detected over it), not the browser
    assert {"gcc", "libc6-dev"} <= set(demo) and "chromium-headless-shell" not in demo
    every = packages_of(tuple(PACKAGE_SETS))
    assert set(every) == set(PACKAGES) and len(every) == len(set(every))
    assert packages_of(("browser", "demo")) == demo + ("chromium-headless-shell",)  # table order
    with pytest.raises(SlurmGpuError, match=r"unknown package set gpu \(known: demo, test, browser\)"):
        packages_of(("demo", "gpu"))


def _client(tmp_path: Path, name: str, body: str) -> str:
    """A stand-in client program (the runner's retry is under test here, not Slurm)."""
    exe = tmp_path / name
    exe.write_text(f"#!/bin/sh\n{body}\n")
    exe.chmod(0o755)
    return str(exe)


QUICK = ClientWait(floor_s=0.5, max_scale=1.0, read_retries=1)


def test_a_read_only_query_that_hangs_once_is_asked_again(tmp_path: Path):
    from slurm_gpu.lab import clients

    mark = tmp_path / "asked"
    squeue = _client(tmp_path, "squeue", f'[ -e {mark} ] && echo RUNNING && exit 0; touch {mark}; exec sleep 30')
    r = clients.run([squeue, "-h"], "/nonexistent/slurm.conf", timeout_s=0.5, wait=QUICK)
    assert r.stdout.strip() == "RUNNING" and mark.exists()


def test_a_write_is_never_repeated(tmp_path: Path):
    from slurm_gpu.lab import clients

    count = tmp_path / "count"
    sbatch = _client(tmp_path, "sbatch", f"echo x >> {count}; exec sleep 30")
    with pytest.raises(SlurmUnreachable, match=r"sbatch gave no answer within 0.5 s"):
        clients.run([sbatch, "--parsable"], "/nonexistent/slurm.conf", timeout_s=0.5, wait=QUICK)
    assert count.read_text().count("x") == 1
