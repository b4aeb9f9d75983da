# SPDX-License-Identifier: Apache-2.0
"""``SummaryStep``: the Epilog stores this node's GPU figures in the job's AdminComment (docs/hooks.md
"The summary step", docs/report.md "The summary in AdminComment"), where ``sacct`` reads them cluster-wide.

Epilog only, after ``AccountingStep`` (it sits before it in the step tuple; the epilog runs the tuple
backwards) and from the records that step wrote for this node. On Slurm 22.05 the job is COMPLETING
while a node Epilog runs and ``scontrol update admincomment=`` is refused, so:

1. read the AdminComment: ``sacct -n -X -P -j N -o AdminComment``;
2. ``summary_codec.merge`` this node's records (None: someone else's content, e.g. Princeton's ``JS1:``:
   left alone, logged);
3. write it: ``sacctmgr -i modify job where jobid=N set AdminComment=TEXT`` (it lower-cases the text:
   the format is base32, read back case-insensitively);
4. read it back and check that this node's rows are there. Another node of the job may have written
   between our read and our write (last writer wins), so on a miss it starts again after a small random
   delay, at most ``ATTEMPTS`` times; in a multi-node job a success is confirmed once more after a
   delay longer than a write takes, which catches a slower node's stale write landing after ours.

Every call goes through the one Slurm adapter (``run_slurm``) with a time limit; the whole step has a
budget (``BUDGET_S``, at most half of ``nvml_timeout_s``). Every failure (no sacct/sacctmgr, slurmdbd
down, a timeout, the job not in accounting) is one log line: never a drain, never a non-zero exit.
"""

from __future__ import annotations

import json
import os
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a hook starts for every job)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from slurm_gpu.node.model import HookContext

ATTEMPTS = 4  # read-merge-write-verify rounds
BUDGET_S = 20.0  # the whole step, all calls and delays together (also at most nvml_timeout_s / 2)
CALL_TIMEOUT_S = 8.0  # one sacct / sacctmgr call
_CLUSTER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


class SummaryError(Exception):
    """A call that did not give an answer we can use (one line)."""


def node_records(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """This node's JSON-lines records, as AccountingStep left them in the per-job state (``lines``)."""
    acct = state.get("accounting")
    lines = acct.get("lines") if isinstance(acct, dict) else None
    out: list[dict[str, Any]] = []
    for line in lines if isinstance(lines, list) else ():
        try:
            rec = json.loads(line)
        except (TypeError, ValueError):
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def multi_node(env: Mapping[str, str]) -> bool:
    """True unless the job's node list (``SLURM_JOB_NODELIST``, given to Prolog/Epilog) names one node."""
    nodes = (env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or "").strip()
    return not nodes or "," in nodes or "[" in nodes


class Writer:
    """The three client calls, each through ``run_slurm`` with a time limit (``deadline``: monotonic)."""

    def __init__(self, cfg: Mapping[str, Any], env: Mapping[str, str], job_id: int, deadline: float) -> None:
        self.env = dict(env)
        self.env.setdefault("PATH", _default_path())
        self.sacct, self.sacctmgr = str(cfg["sacct"]), str(cfg["sacctmgr"])
        self.job_id, self.deadline = job_id, deadline
        cluster = env.get("SLURM_CLUSTER_NAME", "").strip()
        self.cluster = cluster if 0 < len(cluster) <= 64 and set(cluster) <= _CLUSTER_CHARS else ""
        self.longest_s = 0.0  # the slowest call so far (the confirm delay is twice that)
        self.calls: list[str] = []  # "sacct 95" (ms), for the log line

    def _run(self, argv: list[str]) -> str:
        from slurm_gpu.adapters.slurm.runner import run_slurm
        from slurm_gpu.errors import SlurmGpuError

        left = self.deadline - time.monotonic()
        if left <= 0.2:
            raise SummaryError("out of time")
        t0 = time.monotonic()
        try:
            proc = run_slurm(argv, env=self.env, timeout_s=min(CALL_TIMEOUT_S, left))
        except SlurmGpuError as exc:  # not installed (SubmitError), no answer in time (SlurmUnreachable)
            raise SummaryError(str(exc)) from None
        finally:
            took = time.monotonic() - t0
            self.longest_s = max(self.longest_s, took)
            self.calls.append(f"{os.path.basename(argv[0])} {took * 1000:.0f}")
        if proc.returncode != 0:
            text = " ".join((proc.stderr or proc.stdout or "").split())[:300]
            raise SummaryError(f"{os.path.basename(argv[0])} exit {proc.returncode}: {text or 'no message'}")
        return proc.stdout

    def read(self) -> str | None:
        """The job's AdminComment ("" when empty); None when accounting does not know the job (yet)."""
        argv = [self.sacct, "-n", "-X", "-P", "-j", str(self.job_id), "-o", "AdminComment"]
        out = self._run(argv + (["-M", self.cluster] if self.cluster else []))
        if not out:
            return None
        lines = out.rstrip("\n").split("\n")
        return lines[-1].strip()  # the latest record of the id (sacct without -D shows one)

    def write(self, text: str) -> None:
        where = ["where", f"jobid={self.job_id}"] + ([f"cluster={self.cluster}"] if self.cluster else [])
        self._run([self.sacctmgr, "-i", "modify", "job", *where, "set", f"AdminComment={text}"])


def _mine(text: str | None, node: str) -> Any:
    from slurm_gpu.cluster.summary_codec import decode

    summary = decode(text)
    return None if summary is None else summary.nodes.get(node)


def store(writer: Writer, node: str, records: list[dict[str, Any]], several: bool,
          sleep: Callable[[float], None] = time.sleep, jitter: Callable[[float, float], float] | None = None) -> str:
    """Read, merge, write, verify (and, for several nodes, confirm); a sentence saying how it went.
    Raises SummaryError when a call fails."""
    from slurm_gpu.cluster.summary_codec import MAX_NODE_NAME, merge

    if jitter is None:
        import random

        jitter = random.uniform
    key = node[:MAX_NODE_NAME]
    want = None
    if several:
        sleep(jitter(0.0, 0.3))  # spread the nodes of one job a little: fewer collisions to repair
    for attempt in range(1, ATTEMPTS + 1):
        if attempt > 1:
            sleep(min(jitter(0.1, 0.3 * attempt), max(0.0, writer.deadline - time.monotonic() - 1.0)))
        existing = writer.read()
        if existing is None:
            continue  # not in accounting (yet): slurmctld's records may still be on their way to slurmdbd
        new = merge(existing, node, records)
        if new is None:
            return f"AdminComment holds someone else's text ({existing[:40]!r}...); left alone"
        want = _mine(new, key)
        if _mine(existing, key) == want:
            return "already stored (unchanged)"
        writer.write(new)
        if _mine(writer.read(), key) != want:
            continue  # another node's write won the race: merge again
        if not several:
            return f"stored ({len(new)} characters, attempt {attempt})"
        left = max(0.0, writer.deadline - time.monotonic() - 1.0)
        sleep(min(max(0.3, 2 * writer.longest_s) + jitter(0.0, 0.2), left))
        if _mine(writer.read(), key) == want:
            return f"stored ({len(new)} characters, attempt {attempt}, confirmed)"
    if want is None:
        raise SummaryError(f"the job is not in accounting after {ATTEMPTS} reads")
    raise SummaryError(f"this node's rows did not stay after {ATTEMPTS} attempts (other nodes writing)")


def run(payload: Mapping[str, Any], log: Callable[[str], None], env: Mapping[str, str]) -> None:
    """Store one node's records (``payload``: job, node, records, several, sacct, sacctmgr, budget_s,
    spawn_ms); one log line whatever happens."""
    t0 = time.monotonic()
    job = int(payload["job"])
    writer = Writer(payload, env, job, t0 + float(payload["budget_s"]))
    try:
        how = store(writer, str(payload["node"]), list(payload["records"]), bool(payload["several"]))
    except SummaryError as exc:
        how = f"not stored: {exc}"
    except Exception as exc:  # noqa: BLE001 - the summary is a convenience: never the node's failure
        how = f"not stored: internal error: {type(exc).__name__}: {str(exc)[:200]}"
    paid = f"; the epilog paid {payload['spawn_ms']} ms" if payload.get("spawn_ms") is not None else ""
    log(f"job {job}: summary in AdminComment: {how} ({(time.monotonic() - t0) * 1000:.0f} ms; calls, ms: "
        f"{', '.join(writer.calls) or 'none'}{paid})")


class SummaryStep:
    """Epilog: this node's GPU figures into the job's AdminComment (``admin_comment = yes``). ``detach``
    (the default): the calls run in a process of their own (a new session, so that slurmd's clean-up of
    the Epilog's process group leaves it alone), and the Epilog returns at once: the node is not held
    COMPLETING for the ~0.45 s (one node) to ~3 s (several, racing) the clients take."""

    name = "summary"

    def __init__(self, env: Mapping[str, str] | None = None, detach: bool = True) -> None:
        self.env = env if env is not None else os.environ
        self.detach = detach

    def prolog(self, ctx: HookContext) -> None:
        return None

    def epilog(self, ctx: HookContext) -> None:
        if not ctx.config["admin_comment"]:
            return
        job = ctx.job.job_id
        records = node_records(ctx.state)
        if not records:
            return  # nothing accounted on this node (no prolog state, NVML not usable): nothing to add
        if not ctx.job.node:
            ctx.log(f"job {job}: summary not stored: no SLURMD_NODENAME")
            return
        payload: dict[str, Any] = {
            "job": job, "node": ctx.job.node, "records": records, "several": multi_node(self.env),
            "sacct": str(ctx.config["sacct"]), "sacctmgr": str(ctx.config["sacctmgr"]), "log": str(ctx.config["log"]),
            "budget_s": BUDGET_S if self.detach else min(BUDGET_S, float(ctx.config["nvml_timeout_s"]) / 2)}
        if not self.detach:
            run(payload, ctx.log, self.env)
            return
        t0 = time.monotonic()
        import sys

        env = dict(self.env)
        env.setdefault("PATH", _default_path())
        rfd, wfd = os.pipe()
        try:
            # posix_spawn, not Popen: no child object left to warn when it is collected; stdout and stderr to
            # /dev/null, so that slurmd does not wait for the Epilog's output pipe to close
            os.posix_spawn(sys.executable, [sys.executable, "-m", "slurm_gpu.node.summary"], env,
                           file_actions=[(os.POSIX_SPAWN_DUP2, rfd, 0),
                                         (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                                         (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)], setsid=True)
            os.close(rfd)
            rfd = -1
            payload["spawn_ms"] = round((time.monotonic() - t0) * 1000, 1)
            with os.fdopen(wfd, "wb") as f:
                wfd = -1
                f.write(json.dumps(payload).encode())
        except (OSError, ValueError) as exc:
            ctx.log(f"job {job}: summary not stored: cannot start its process: {exc}")
        finally:
            for fd in (rfd, wfd):
                if fd >= 0:
                    os.close(fd)


def _default_path() -> str:
    from slurm_gpu.node.model import DEFAULT_PATH

    return DEFAULT_PATH


def main() -> int:
    """The detached process: the payload on stdin, one line to the hooks' log (and nothing else)."""
    import signal

    signal.alarm(int(BUDGET_S) + 10)  # backstop: every call and delay is bounded already
    try:
        import sys

        payload = json.loads(sys.stdin.buffer.read(1 << 24))
        from slurm_gpu.adapters.fs import Log

        log = Log("slurm-gpu-epilog", str(payload.get("log", "")))
        try:
            run(payload, log, os.environ)
        finally:
            log.close()
    except Exception:  # noqa: BLE001 - no traceback from a detached helper; nothing to report it to
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["SummaryStep", "SummaryError", "Writer", "store", "run", "main", "node_records", "multi_node", "ATTEMPTS",
           "BUDGET_S", "CALL_TIMEOUT_S"]
