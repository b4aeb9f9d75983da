# SPDX-License-Identifier: Apache-2.0
"""The node hooks' agent, ``slurm-gpu-hook-agent`` (docs/hooks.md, "The agent"): optional, root, one per node.

A Prolog or Epilog in its own process pays a Python start and ~20 ms of imports (nvidia-ml-py, json,
the steps) for every job, twice; the node takes the next job only when the Epilog is done
(benchmarks/bench_hooks.py). The agent imports all of that once and forks one child per hook run, so
a run costs a fork. It runs the same code as the entry points: the child is the entry point, with the
client's environment, standard streams and exit status. Without an agent (no socket, nothing
listening, a socket that is not root's), the entry point runs the hook in its own process as before.

Protocol, over a unix stream socket (root's, 0600, in a root-owned directory not writable by others):
the client (``slurm-gpu-prolog``/``-epilog`` as root) connects and sends the request: its length (4
bytes, big-endian), then ``MAGIC phase NUL`` and the environment as NUL-separated ``KEY=VALUE`` (at most
``MAX_REQUEST`` bytes). The agent accepts only uid 0 (SO_PEERCRED) and forks; the child reads the
request and answers ``S`` (started); only then does the client send its stdin, stdout and stderr
(SCM_RIGHTS, with one byte), so that an agent stuck before ``S`` never holds the client's output pipes
open (slurmd would wait for their end). The child runs the hook on them, answers one byte, the exit
status, and exits. No ``S`` within ``STARTED_WAIT_S``: the hook did not start, and the client runs it
itself. ``S`` and no status (the child died): the client says so and exits 0, as for any fault of ours.
"""

from __future__ import annotations

import os
import sys

MAGIC = b"SGA1 "
MAX_REQUEST = 256 * 1024
STARTED = b"S"
STARTED_WAIT_S = 10.0  # no "started" by then (an agent that accepts but is stuck): run the hook here
PHASES = ("prolog", "epilog")
ENV_SOCKET = "SLURM_GPU_HOOKS_AGENT"  # the socket's path; the shims set it (hooks.env in the lab)
DEFAULT_SOCKET = "/run/slurm-gpu/agent.sock"

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the client runs for every job)
if TYPE_CHECKING:
    import socket
    from collections.abc import Callable, Mapping
    from typing import NoReturn


def encode(phase: str, env: Mapping[str, str]) -> bytes:
    body = b"\0".join(f"{k}={v}".encode("utf-8", "surrogateescape") for k, v in env.items() if "\0" not in k + v)
    return MAGIC + phase.encode() + b"\0" + body


def decode(data: bytes) -> tuple[str, dict[str, str]] | None:
    """(phase, environment), or None for anything that is not a well-formed request."""
    if not data.startswith(MAGIC) or len(data) > MAX_REQUEST:
        return None
    head, _, body = data[len(MAGIC):].partition(b"\0")
    phase = head.decode("ascii", "replace")
    if phase not in PHASES:
        return None
    env: dict[str, str] = {}
    for item in body.split(b"\0") if body else ():
        key, eq, value = item.partition(b"=")
        if not eq or not key:
            return None
        env[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
    return phase, env


# ---------------------------------------------------------------- client (inside the entry point)

def run_via_agent(path: str, phase: str, env: Mapping[str, str], wait_s: float) -> int | None:
    """The hook's exit status as the agent ran it; None when it did not start there (run it here).
    ``_socket``, not ``socket``: the socket module imports enum and selectors (~5 ms of every run)."""
    try:
        st = os.lstat(path)
        if (st.st_mode & 0o170000) != 0o140000 or st.st_uid != 0:  # a socket, root's: else not ours
            return None
        import _socket

        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except (OSError, ImportError):
        return None
    try:
        sock.settimeout(5)
        sock.connect(path)
        data = encode(phase, env)
        sock.sendall(len(data).to_bytes(4, "big") + data)
        sock.settimeout(STARTED_WAIT_S)  # the child answers before it runs anything
        if sock.recv(1) != STARTED:
            sock.close()
            return None
        fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2))
        sock.sendmsg([b"F"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
        sock.settimeout(wait_s)
    except OSError:
        sock.close()
        return None
    try:
        status = sock.recv(1)
    except OSError:
        status = b""
    finally:
        sock.close()
    if not status:
        sys.stderr.write(f"slurm-gpu {phase}: the hook agent's run ({path}) ended without a status; nothing "
                         "drained\n")
        return 0
    return status[0]


# ---------------------------------------------------------------- the agent

def preload() -> list[str]:
    """Import what any hook run may need, so that no child imports it again; lines for what failed."""
    problems = []
    try:
        from slurm_gpu.adapters.gpu_node import import_pynvml

        import_pynvml()
    except ImportError as exc:
        problems.append(f"nvidia-ml-py not importable ({exc}); each run will say so")
    import importlib

    for name in ("json", "signal", "subprocess", "threading", "slurm_gpu.node.runner", "slurm_gpu.node.steps",
                 "slurm_gpu.node.share_steps", "slurm_gpu.node.summary", "slurm_gpu.adapters.fs",
                 "slurm_gpu.sharing.mig", "slurm_gpu.sharing.mps", "slurm_gpu.sharing.token", "slurm_gpu.node.entry"):
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - a child imports it again and reports for itself
            problems.append(f"preload {name}: {type(exc).__name__}: {exc}")
    return problems


def listen(path: str) -> socket.socket:
    """The listening socket at ``path``: its directory root's and not writable by others (created 0755
    if missing: /run/slurm-gpu also holds the task directory the job's user reads), a stale socket of
    root's replaced, never anything else; the socket 0600 (only root can connect)."""
    import socket
    import stat

    from slurm_gpu.adapters.fs import open_dir

    parent, name = os.path.split(os.path.abspath(path))
    dfd = open_dir(parent, create=True, mode=0o755)
    try:
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None:
            if not stat.S_ISSOCK(st.st_mode) or st.st_uid != 0:
                raise OSError(17, f"{path} exists and is not a socket of root's; left alone")
            os.unlink(name, dir_fd=dfd)
    finally:
        os.close(dfd)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(path)
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(64)
    return sock


def _peer_uid(conn: socket.socket) -> int:
    import socket
    import struct

    raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    uid: int = struct.unpack("3i", raw)[1]
    return uid


def _read(conn: socket.socket, n: int) -> bytes:
    """Exactly ``n`` bytes (fewer only at the end of the stream)."""
    chunks, got = [], 0
    while got < n:
        chunk = conn.recv(min(n - got, 65536))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _child(conn: socket.socket, listener: socket.socket) -> NoReturn:
    """In the forked child: read the request, become the entry point, answer. Never returns."""
    import socket

    rc = 0
    try:
        listener.close()
        conn.settimeout(10)
        size = int.from_bytes(_read(conn, 4), "big")
        request = decode(_read(conn, size)) if 0 < size <= MAX_REQUEST else None
        if request is None:
            os._exit(0)
        phase, env = request
        conn.sendall(STARTED)
        _byte, fds, _flags, _addr = socket.recv_fds(conn, 1, 3)
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            os._exit(0)
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
            os.close(fd)
        os.environ.clear()
        os.environ.update(env)
        os.chdir("/")
        os.umask(0o022)  # slurmd's, whatever the agent was started with: the TaskProlog (the user) reads files
        from slurm_gpu.node.entry import run_phase

        rc = run_phase(phase)
    except BaseException as exc:  # noqa: BLE001 - a fault of ours: status 0, like the entry point
        from slurm_gpu.node.entry import our_fault

        rc = our_fault("slurm-gpu hook agent", exc)
    try:
        sys.stderr.flush()
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    try:
        conn.sendall(bytes([rc & 0xFF]))
    except OSError:
        pass
    os._exit(0)


def serve(path: str, say: Callable[[str], None] | None = None) -> int:
    """Accept requests until SIGTERM/SIGINT; one forked child per request. Returns the exit status."""
    import signal
    import time

    def log(text: str) -> None:
        sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} slurm-gpu-hook-agent[{os.getpid()}]: {text}\n")
        sys.stderr.flush()

    say = say or log
    if os.geteuid() != 0:
        say("must run as root (the Prolog and Epilog are root's)")
        return 1
    for line in preload():
        say(line)
    try:
        listener = listen(path)
    except OSError as exc:
        say(f"cannot listen on {path}: {exc.strerror or exc}")
        return 1
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    listener.settimeout(1.0)
    say(f"listening on {path}")
    children = 0
    try:
        while not stop:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                conn = None
            except InterruptedError:
                conn = None
            except OSError as exc:
                say(f"accept: {exc}")
                time.sleep(0.1)
                conn = None
            if conn is not None:
                try:
                    uid = _peer_uid(conn)
                    if uid != 0:
                        say(f"refused a client of uid {uid} (only root's Prolog/Epilog)")
                    else:
                        pid = os.fork()
                        if pid == 0:
                            signal.signal(signal.SIGTERM, signal.SIG_DFL)
                            signal.signal(signal.SIGINT, signal.SIG_DFL)
                            _child(conn, listener)
                        children += 1
                except OSError as exc:
                    say(f"request not served: {exc}")
                finally:
                    conn.close()
            while children:  # reap without blocking; a child that hangs is bounded by its own alarm
                try:
                    pid, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    children = 0
                    break
                if pid == 0:
                    break
                children -= 1
    finally:
        listener.close()
        try:
            os.unlink(path)
        except OSError:
            pass
    say("stopped")
    return 0
