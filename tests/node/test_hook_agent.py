# SPDX-License-Identifier: Apache-2.0
"""The node hooks' agent (slurm_gpu/node/agent.py): the same runs as the entry points, forked from
one process that has their imports loaded; without it (or when it does not start a run) the entry point
runs the hook itself. Real hooks over the stand-in libnvidia-ml.so.1, as in test_node_hooks.py."""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import needs_other_user

_spec = importlib.util.spec_from_file_location("node_hooks_common_agent",
                                               Path(__file__).with_name("test_node_hooks.py"))
common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(common)
hooks, lib_dir, ok, JOB, Hooks = common.hooks, common.lib_dir, common.ok, common.JOB, common.Hooks
pytestmark = common.pytestmark
BIN = Path(sys.executable).parent

from slurm_gpu.node import agent as hook_agent  # noqa: E402


class Agent:
    def __init__(self, h: Hooks, where: Path | None = None) -> None:
        self.dir = where or h.tmp / "agent"
        self.sock = self.dir / "agent.sock"
        self.log = h.tmp / "agent.log"
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen([str(BIN / "slurm-gpu-hook-agent"), "--socket", str(self.sock)],
                                         env=h.env(), stdout=out, stderr=subprocess.STDOUT)
        for _ in range(200):
            if self.sock.exists() or self.proc.poll() is not None:
                break
            time.sleep(0.05)
        assert self.sock.exists(), self.log.read_text()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture
def agent(hooks: Hooks) -> Iterator[Agent]:
    a = Agent(hooks)
    yield a
    a.stop()


def fake_agent(tmp_path: Path, name: str) -> tuple[socket.socket, Path]:
    """A listening socket of root's where an agent's would be, served by the test itself."""
    d = tmp_path / name
    d.mkdir(mode=0o700)
    path = d / "agent.sock"
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(path))
    srv.listen(1)
    return srv, path


def run(h: Hooks, phase: str, agent: Agent | None, **extra: str) -> tuple[subprocess.CompletedProcess, int]:
    """The entry point as slurmd would start it; (result, its pid)."""
    env = h.env(**extra)
    if agent is not None:
        env["SLURM_GPU_HOOKS_AGENT"] = str(agent.sock)
    p = subprocess.Popen([str(BIN / f"slurm-gpu-{phase}")], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, cwd=h.tmp)
    out, err = p.communicate(timeout=60)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err), p.pid


def log_pids(h: Hooks, phase: str) -> set[int]:
    text = (h.root / "log" / "hooks.log").read_text()
    return {int(m) for m in re.findall(rf"slurm-gpu-{phase}\[(\d+)\]", text)}


def test_prolog_and_epilog_run_in_the_agent_with_the_same_effects(hooks: Hooks, agent: Agent):
    r, pid = run(hooks, "prolog", agent)
    ok(r)
    assert sorted(os.listdir(hooks.root / "jobmap")) == ["2", "3"]
    assert (hooks.root / "jobmap" / "2").read_text().strip() == str(JOB)
    pids = log_pids(hooks, "prolog")
    assert pids and pid not in pids  # logged by the agent's child, not by the entry point's process
    assert "job 4242: prolog: GPUs 2=index 2" in r.stderr  # its stderr is the entry point's
    r, pid = run(hooks, "epilog", agent)
    ok(r)
    assert os.listdir(hooks.root / "jobmap") == []
    assert [(r["job_id"], r["gpu_index"]) for r in hooks.acct_lines()] == [(JOB, 2), (JOB, 3)]
    assert pid not in log_pids(hooks, "epilog")
    assert hooks.drains() == []


def test_a_health_failure_drains_the_same_through_the_agent(hooks: Hooks, agent: Agent):
    ok(run(hooks, "prolog", agent)[0])
    hooks.set_gpu(3, "ecc_volatile_uncorrected", "2")
    ok(run(hooks, "epilog", agent)[0])
    reason = common.drain_reason(hooks)
    assert "GPU 3" in reason and "2 uncorrectable ECC error(s)" in reason


def test_driver_not_loaded_and_epilog_twice_through_the_agent(hooks: Hooks, agent: Agent):
    hooks.node(fail=("driver_not_loaded",))
    for phase in ("prolog", "epilog", "epilog"):
        assert "Driver Not Loaded" in ok(run(hooks, phase, agent)[0])
    assert hooks.drains() == []


def test_no_agent_listening_runs_the_hook_in_the_entry_point(hooks: Hooks, tmp_path: Path):
    sock = tmp_path / "none" / "agent.sock"
    env = {"SLURM_GPU_HOOKS_AGENT": str(sock)}
    r, pid = run(hooks, "prolog", None, **env)
    ok(r)
    assert log_pids(hooks, "prolog") == {pid}
    # a socket file nobody listens on (an agent that died): the same
    sock.parent.mkdir()
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(sock))
    s.close()
    r, pid = run(hooks, "epilog", None, **env)
    ok(r)
    assert pid in log_pids(hooks, "epilog") and os.listdir(hooks.root / "jobmap") == []


def test_a_socket_that_is_not_roots_is_not_used(hooks: Hooks, agent: Agent):
    os.chown(agent.sock, 1001, -1)  # an agent socket of another user's: the entry point runs the hook itself
    r, pid = run(hooks, "prolog", agent)
    ok(r)
    assert log_pids(hooks, "prolog") == {pid}


def test_the_agent_refuses_a_client_that_is_not_root(hooks: Hooks):
    import tempfile

    needs_other_user("nobody", code="import socket")  # the client runs as nobody, with this interpreter

    where = Path(tempfile.mkdtemp(prefix="slurm-gpu-agent-test-"))  # a directory other users can reach
    os.chmod(where, 0o755)
    agent = Agent(hooks, where / "d")
    os.chmod(agent.dir, 0o755)
    os.chmod(agent.sock, 0o666)  # as if an admin had opened it up: the agent still checks who connects
    try:
        _refused(hooks, agent)
    finally:
        agent.stop()
        import shutil

        shutil.rmtree(where, ignore_errors=True)


def _refused(hooks: Hooks, agent: Agent) -> None:
    code = ("import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\nr=b''\n"
            "try:\n m=b'SGA1 prolog\\0SLURM_JOB_ID=1'\n s.sendall(len(m).to_bytes(4,'big')+m)\n r=s.recv(1)\n"
            "except OSError:\n r=b''\nprint(repr(r))")  # closed at once: a reset or a broken pipe is the same
    r = subprocess.run(["runuser", "-u", "nobody", "--", sys.executable, "-c", code, str(agent.sock)],
                       capture_output=True, text=True, timeout=30)
    assert r.stdout.strip() == "b''", r.stdout + r.stderr  # closed without starting anything
    time.sleep(0.2)
    assert "refused a client of uid" in agent.log.read_text()
    assert not (hooks.root / "jobmap").exists() or os.listdir(hooks.root / "jobmap") == []


def test_a_malformed_request_starts_nothing(hooks: Hooks, agent: Agent):
    for payload in (b"GET / HTTP/1.0\r\n\r\n", b"SGA1 rm -rf\0X=1", b"SGA1 prolog\0NOEQUALS",
                    b"SGA1 prolog\0" + b"x" * 300000):
        s = socket.socket(socket.AF_UNIX)
        s.connect(str(agent.sock))
        try:
            s.sendall(len(payload).to_bytes(4, "big") + payload)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the agent closed at once
        try:
            assert s.recv(1) == b""  # closed: nothing started
        except ConnectionResetError:
            pass  # closed before it read everything: nothing started either
        s.close()
    assert agent.proc.poll() is None  # still serving
    ok(run(hooks, "prolog", agent)[0])


def test_started_but_no_status_is_our_fault_and_exits_0(hooks: Hooks, tmp_path: Path):
    """A child that dies after it started the run (killed, out of memory): no rerun, no drain, one line."""
    srv, path = fake_agent(tmp_path, "fake")

    def serve_once() -> None:
        conn, _ = srv.accept()
        conn.recv(65536)
        conn.sendall(hook_agent.STARTED)
        _msg, fds, _f, _a = socket.recv_fds(conn, 1, 3)
        for fd in fds:
            os.close(fd)
        conn.close()

    t = threading.Thread(target=serve_once, daemon=True)
    t.start()
    r, pid = run(hooks, "prolog", None, SLURM_GPU_HOOKS_AGENT=str(path))
    t.join(10)
    srv.close()
    assert "ended without a status; nothing drained" in ok(r)
    assert not (hooks.root / "log" / "hooks.log").exists() or pid not in log_pids(hooks, "prolog")


def test_requests_round_trip_and_bad_ones_are_refused():
    env = {"SLURM_JOB_ID": "7", "EMPTY": "", "WEIRD": "a=b c\u00e9"}
    assert hook_agent.decode(hook_agent.encode("epilog", env)) == ("epilog", env)
    assert hook_agent.decode(hook_agent.encode("prolog", {"BAD": "x\0y"})) == ("prolog", {})
    for bad in (b"", b"SGA1 ", b"SGA1 task_prolog\0A=1", b"SGA2 prolog\0A=1", b"SGA1 prolog\0=1",
                b"SGA1 prolog\0A=1\0\0", b"SGA1 prolog\0" + b"A=" + b"1" * hook_agent.MAX_REQUEST):
        assert hook_agent.decode(bad) is None, bad


def test_the_lab_installs_the_launcher_and_the_shims_name_the_agent(tmp_path: Path):
    from slurm_gpu.node.install import install

    root = tmp_path / "etc"
    install(str(root), None)
    shim = (root / "prolog.sh").read_text()
    assert f'SLURM_GPU_PROLOG="{root}/slurm-gpu-hook prolog"' in shim
    assert "SLURM_GPU_HOOKS_AGENT=${SLURM_GPU_HOOKS_AGENT:-/run/slurm-gpu/agent.sock}" in shim
    assert "SLURM_GPU_HOOKS_AGENT" not in (root / "task_prolog.sh").read_text()  # the user's: no agent
    launcher = (root / "slurm-gpu-hook").read_text()
    assert launcher.startswith(f"#!{sys.executable} -I\n") and "import re" not in launcher
    unit = (root / "slurm-gpu-hook-agent.service").read_text()
    assert "ExecStart=" in unit and "--socket /run/slurm-gpu/agent.sock" in unit
    r = subprocess.run([str(root / "slurm-gpu-hook"), "nonsense"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "usage: slurm-gpu-hook prolog|epilog|task-prolog" in r.stderr


def test_admin_check_reports_the_agent(hooks: Hooks, agent: Agent, tmp_path: Path):
    from slurm_gpu.node.install import _agent_check

    assert _agent_check(str(agent.sock)) == (True, f"hook agent: listening on {agent.sock}")
    assert _agent_check(str(tmp_path / "absent.sock"))[0] is True  # optional
    agent.stop()
    dead = tmp_path / "dead.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(dead))
    s.close()
    os.chmod(dead, 0o600)
    ok_, line = _agent_check(str(dead))
    assert not ok_ and "nobody listening" in line
    os.chmod(dead, 0o666)
    ok_, line = _agent_check(str(dead))
    assert not ok_ and "not a socket of root's with mode 0600" in line


def test_an_agent_that_accepts_and_never_answers_is_not_waited_for(hooks: Hooks, tmp_path: Path):
    """Stuck before it started anything: after STARTED_WAIT_S the entry point runs the hook itself."""
    srv, path = fake_agent(tmp_path, "stuck")
    held = []
    t = threading.Thread(target=lambda: held.append(srv.accept()), daemon=True)
    t.start()
    began = time.monotonic()
    r, pid = run(hooks, "prolog", None, SLURM_GPU_HOOKS_AGENT=str(path))
    took = time.monotonic() - began
    ok(r)
    assert log_pids(hooks, "prolog") == {pid} and sorted(os.listdir(hooks.root / "jobmap")) == ["2", "3"]
    assert hook_agent.STARTED_WAIT_S <= took < hook_agent.STARTED_WAIT_S + 30
    t.join(5)
    for conn, _ in held:
        conn.close()
    srv.close()
