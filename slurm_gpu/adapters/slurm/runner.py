# SPDX-License-Identifier: Apache-2.0
"""The one runner every Slurm client call goes through (sbatch, srun, scontrol, squeue, sinfo, sacct,
sacctmgr, scancel): a subprocess with a timeout, stdin closed, optionally as another user.

A client hangs about 9 s when slurmctld is down and about 60 s when its slurm.conf is missing, so no
call may go without a timeout. A command that is not installed raises :class:`SubmitError`; one that
gives no answer in time raises :class:`SlurmUnreachable`; a non-zero exit is returned, not raised
(``check=True`` raises it as one line).

:func:`stream_slurm` is the variant for answers too large to hold (a report's window of sacct rows): its
stdout is read line by line as the caller consumes it, with the same bounds (the whole call within the
timeout: the process is killed at the deadline; stderr kept to its first 64 KiB; a line over
``max_line`` bytes is dropped, counted in ``Lines.dropped``).
"""

from __future__ import annotations

import io
import os
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import IO

from slurm_gpu.errors import SlurmUnreachable, SubmitError
from slurm_gpu.plain import Record, record
from slurm_gpu.slurm.records import one_line

DEFAULT_TIMEOUT_S = 15.0


@record
class ClientWait(Record):
    """How long a client call of the lab (``slurm_gpu.lab.clients``: the lab, the demo, the test helpers)
    waits, tuned to the machine. Why: a client answers in about 0.1 s on an idle lab, but on a 2-CPU
    machine at load average 4 (the suite beside other users) squeue once took over 5 s
    (tests/gpusub/test_locality_lab.py, "squeue gave no answer within 5 s"). So each attempt's bound is
    the caller's base scaled by the load per CPU (``min_scale`` to ``max_scale``) and never below
    ``floor_s``, and a read-only query that times out is asked ``read_retries`` more times; a write
    (sbatch, scancel, sacctmgr) is never repeated. Worst case stays bounded: (1 + retries) x attempt."""

    floor_s: float = 10.0  # no lab client attempt waits less (probes such as `scontrol ping` excepted)
    min_scale: float = 1.0
    max_scale: float = 4.0
    read_retries: int = 1


CLIENT_WAIT = ClientWait()
# (command, first argument or "") that only read: safe to ask again after a timeout
READ_ONLY = frozenset({("squeue", ""), ("sinfo", ""), ("sacct", ""), ("scontrol", "show"), ("scontrol", "ping"),
                       ("sacctmgr", "show"), ("sacctmgr", "list"), ("sdiag", "")})


def load_scale(load_1min: float, cpus: int, wait: ClientWait = CLIENT_WAIT) -> float:
    """The factor on a client's base wait: the runnable processes per CPU, within the table's bounds."""
    return min(wait.max_scale, max(wait.min_scale, load_1min / max(cpus, 1)))


def machine_scale(wait: ClientWait = CLIENT_WAIT) -> float:
    """:func:`load_scale` for this machine now (1-minute load average, usable CPUs)."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    return load_scale(load, len(os.sched_getaffinity(0)), wait)


def attempt_s(base_s: float, *, probe: bool = False, wait: ClientWait = CLIENT_WAIT) -> float:
    """One attempt's bound: ``base_s`` scaled to the machine, at least ``floor_s`` unless ``probe``."""
    scaled = base_s * machine_scale(wait)
    return scaled if probe else max(wait.floor_s, scaled)


def is_read_only(argv: Sequence[str]) -> bool:
    name = os.path.basename(argv[0]) if argv else ""
    sub = next((a for a in argv[1:] if not a.startswith("-")), "")
    return (name, "") in READ_ONLY or (name, sub) in READ_ONLY
# stderr texts that mean "no controller answered", not "Slurm said no"
UNREACHABLE_MARKERS = ("Unable to contact slurm controller", "Socket timed out", "Connection refused",
                       "Could not establish a configuration source", "Zero Bytes were transmitted")


def run_slurm(argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
              cwd: str | None = None, user: str | None = None, user_env: Mapping[str, str] | None = None,
              check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run one Slurm client command. ``user`` (not root): run it through ``runuser -u USER -- env K=V ...``
    with only ``user_env`` set on top of runuser's clean environment (e.g. SLURM_CONF, GPUSUB_POLICY)."""
    env = dict(os.environ if env is None else env)
    full = list(argv)
    if user and user != "root":
        passed = [f"{k}={v}" for k, v in (user_env or {}).items()]
        full = ["runuser", "-u", user, "--", "env", *passed, *argv]
    try:
        # bytes that are no UTF-8 (a job name, a comment: any user's text) must not end the caller
        proc = subprocess.run(full, capture_output=True, encoding="utf-8", errors="replace", timeout=timeout_s,
                              env=env, cwd=cwd, stdin=subprocess.DEVNULL, check=False)
    except FileNotFoundError:
        raise SubmitError(f"{argv[0]}: command not found; install the Slurm client (Debian: slurm-client) "
                          "or put it on PATH") from None
    except subprocess.TimeoutExpired:
        raise SlurmUnreachable(
            f"{os.path.basename(argv[0])} gave no answer within {timeout_s:g} s; is slurmctld up? "
            f"(SLURM_CONF={env.get('SLURM_CONF', '/etc/slurm/slurm.conf')}; command: {' '.join(argv)})") from None
    if check and proc.returncode != 0:
        raise failure(" ".join(argv), proc.stderr or proc.stdout, env, proc.returncode)
    return proc


MAX_STDERR = 64 << 10  # bytes of a streamed command's stderr that are kept (for its error line)
MAX_LINE = 1 << 20  # bytes of one streamed line (sacct's longest field, AdminComment, is at most 60,000)


class Lines:
    """The lines of a streamed command's stdout (UTF-8, undecodable bytes replaced; without their newline),
    read lazily; ``dropped``: lines over the bound, skipped whole; ``ended``: the whole output was read."""

    def __init__(self, stream: IO[bytes], max_line: int) -> None:
        self._stream, self._max, self.dropped, self.ended = stream, max_line, 0, False

    def __iter__(self) -> Iterator[str]:
        read, limit = self._stream.readline, self._max
        while True:
            line = read(limit)
            if not line:
                self.ended = True
                return
            if line.endswith(b"\n"):
                yield line[:-1].decode("utf-8", "replace")
                continue
            if len(line) < limit:  # the last line, without a newline
                self.ended = True
                yield line.decode("utf-8", "replace")
                return
            self.dropped += 1  # too long: skip the rest of it
            while line and not line.endswith(b"\n"):
                line = read(limit)


@contextmanager
def stream_slurm(argv: Sequence[str], *, env: Mapping[str, str] | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, what: str | None = None,
                 max_line: int = MAX_LINE) -> Iterator[Lines]:
    """Run one Slurm client command and give its stdout as :class:`Lines` to read while it runs. The whole
    call, the reading included, is bounded by ``timeout_s`` (then the process is killed and
    :class:`SlurmUnreachable` raised); a non-zero exit raises :func:`failure` (labelled ``what``, default
    the command) once the body is done, so a caller never takes a cut answer for a whole one. A body that
    stops reading early (it had enough) ends the command; its exit is then not checked."""
    env = dict(os.environ if env is None else env)
    try:
        proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, env=env)
    except FileNotFoundError:
        raise SubmitError(f"{argv[0]}: command not found; install the Slurm client (Debian: slurm-client) "
                          "or put it on PATH") from None
    assert proc.stdout is not None and proc.stderr is not None
    err = bytearray()

    def drain(pipe: io.BufferedReader) -> None:  # stderr must not fill its pipe and block the command
        for chunk in iter(lambda: pipe.read1(1 << 16), b""):
            err.extend(chunk[: max(0, MAX_STDERR - len(err))])

    expired = threading.Event()

    def kill() -> None:
        expired.set()
        proc.kill()

    drainer = threading.Thread(target=drain, args=(proc.stderr,), daemon=True)
    drainer.start()
    timer = threading.Timer(timeout_s, kill)
    timer.daemon = True
    timer.start()
    lines = Lines(proc.stdout, max_line)
    try:
        yield lines
    finally:
        if not lines.ended:
            proc.kill()
        timer.cancel()
        proc.stdout.close()
        rc = proc.wait()
        drainer.join()
        proc.stderr.close()
    if expired.is_set():
        raise SlurmUnreachable(
            f"{os.path.basename(argv[0])} gave no whole answer within {timeout_s:g} s; is slurmctld up? "
            f"(SLURM_CONF={env.get('SLURM_CONF', '/etc/slurm/slurm.conf')}; command: {' '.join(argv)})")
    if rc != 0 and lines.ended:
        raise failure(what or " ".join(argv), err.decode("utf-8", errors="replace"), env, rc)


def failure(what: str, stderr: str, env: Mapping[str, str] | None = None, rc: int | None = None) -> SubmitError:
    """The error for a failed client call: one line, SlurmUnreachable when no controller answered."""
    line = one_line(stderr, f"{what} failed with no message")
    conf = (env or os.environ).get("SLURM_CONF", "/etc/slurm/slurm.conf")
    if any(marker in stderr for marker in UNREACHABLE_MARKERS):
        return SlurmUnreachable(f"{what}: {line} (SLURM_CONF={conf})")
    return SubmitError(f"{what}{'' if rc is None else f' (exit {rc})'}: {line}")


__all__ = ["run_slurm", "stream_slurm", "Lines", "failure", "DEFAULT_TIMEOUT_S", "UNREACHABLE_MARKERS"]
