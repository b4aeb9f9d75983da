# SPDX-License-Identifier: Apache-2.0
"""Daemon processes of the lab: start detached, record ``pid starttime`` in a pidfile, stop exactly
those pids (checked by /proc/PID/comm and start time; zombies count as stopped)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable

from slurm_gpu.digits import is_digits


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    # comm may contain spaces/parens: split after the last ')'
    return text[text.rfind(")") + 2 :].split()


def alive(pid: int) -> bool:
    """True if ``pid`` exists and is neither a zombie nor dead."""
    fields = _stat_fields(pid)
    return bool(fields and fields[0] not in ("Z", "X"))


def start_time(pid: int) -> str | None:
    fields = _stat_fields(pid)
    return fields[19] if fields else None  # field 22 of stat = index 19 after pid and comm


def comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def write_pidfile(path: str, pid: int) -> None:
    with open(path, "w") as f:
        f.write(f"{pid} {start_time(pid) or 0}\n")


def read_pidfile(path: str) -> tuple[int, str] | None:
    try:
        with open(path) as f:
            parts = f.read().split()
        return int(parts[0]), (parts[1] if len(parts) > 1 else "")
    except (OSError, ValueError, IndexError):
        return None


def pidfile_process(path: str, want_comm: str) -> int | None:
    """The live pid recorded in ``path`` if it is still our process (comm and start time match)."""
    rec = read_pidfile(path)
    if not rec:
        return None
    pid, started = rec
    if not alive(pid) or want_comm not in comm(pid):
        return None
    if started and started != "0" and start_time(pid) != started:
        return None
    return pid


def start_detached(argv: list[str], log_path: str, pidfile: str, env: dict[str, str] | None = None,
                   comm_of: str | None = None) -> int:
    """Start ``argv`` in its own session, stdout/stderr to ``log_path``; returns its pid.

    ``setsid`` does not fork when its caller is not a group leader (the case under a non-interactive
    sh), so ``$!`` is the daemon's own pid, and the daemon is reparented to init when sh exits.
    """
    script = 'log=$1; shift; setsid "$@" >>"$log" 2>&1 </dev/null & echo $!'
    out = subprocess.run(
        ["sh", "-c", script, "sh", log_path, *argv], capture_output=True, text=True, env=env, timeout=30, check=True
    ).stdout
    pid = int(out.strip())
    # `$!` is sh's background child, which becomes the daemon only once setsid has exec'd it: until then
    # its comm is sh's or setsid's, and a check by name would take the daemon for dead (seen under load
    # average 19: "mariadb died: no output"). Wait for the exec, bounded.
    want = os.path.basename(comm_of or argv[0])[:15]  # comm_of: the program argv finally exec()s
    deadline = time.monotonic() + 10
    while alive(pid) and comm(pid) != want and time.monotonic() < deadline:
        time.sleep(0.01)
    write_pidfile(pidfile, pid)
    return pid


def stop_pid(pid: int, term_wait_s: float = 15.0) -> bool:
    """SIGTERM, wait up to ``term_wait_s``, then SIGKILL. Returns True if it needed SIGKILL."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + term_wait_s
    while time.monotonic() < deadline:
        if not alive(pid):
            return False
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return True


def stop_pidfile(path: str, want_comm: str, say: Callable[[str], object] = print) -> None:
    """Stop the process recorded in ``path`` if it is still ours; always remove the pidfile."""
    if not os.path.exists(path):
        return
    pid = pidfile_process(path, want_comm)
    if pid is not None and stop_pid(pid):
        say(f"pid {pid} ({want_comm}) ignored SIGTERM; sent SIGKILL")
    elif pid is None:
        rec = read_pidfile(path)
        if rec and alive(rec[0]):
            say(f"{path}: pid {rec[0]} is now {comm(rec[0])!r}, not ours; left alone")
    os.unlink(path)


def pids_by_comm(name: str) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if is_digits(entry) and comm(int(entry)) == name:
            out.append(int(entry))
    return out


def has_env(pid: int, key: str, value: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f"{key}={value}".encode() in f.read().split(b"\0")
    except OSError:
        return False


def unix_socket_paths(pid: int) -> set[str]:
    """Paths of the unix sockets ``pid`` holds open (via /proc/PID/fd and /proc/net/unix)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        return set()
    paths = set()
    try:
        with open("/proc/net/unix") as f:
            next(f, None)
            for line in f:
                parts = line.split()
                if len(parts) >= 8 and parts[6] in inodes:
                    paths.add(parts[7])
    except OSError:
        pass
    return paths


def descendants(pid: int) -> list[int]:
    """All live descendants of ``pid`` (children first found, deepest last)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if is_digits(entry):
            fields = _stat_fields(int(entry))
            if fields and len(fields) > 1:
                children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out
