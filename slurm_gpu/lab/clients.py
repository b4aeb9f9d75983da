# SPDX-License-Identifier: Apache-2.0
"""Slurm client calls for the lab: SLURM_CONF set, as root or as the unprivileged lab user.

Every command goes through the one runner (:func:`slurm_gpu.adapters.slurm.run_slurm`, with a timeout:
a client hangs ~9 s when slurmctld is down) and every record is read by :mod:`slurm_gpu.slurm.records`.
Used by ``slurm-gpu lab``, the demo and the test fixtures: poll job states with a deadline (never a
fixed sleep), read a job's record (squeue's JSON, the one job reader: docs/records.md).
"""

from __future__ import annotations

import os
import subprocess
import time

from slurm_gpu.adapters.slurm import run_slurm
from slurm_gpu.adapters.slurm.runner import CLIENT_WAIT, ClientWait, attempt_s, is_read_only
from slurm_gpu.errors import SlurmUnreachable
from slurm_gpu.slurm.records import NodeAlloc, job_from, parse_node_records, parse_parsable, read_jobs, topology_of

FINAL_STATES = frozenset(
    {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}
)
# "planned" (Slurm >= 23.02): idle, but the backfill scheduler has planned a pending job on it
GOOD_NODE_STATES = frozenset({"idle", "mixed", "allocated", "completing", "planned"})


def client_env(slurm_conf: str, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["SLURM_CONF"] = slurm_conf
    return env


def run(
    argv: list[str],
    slurm_conf: str,
    *,
    timeout_s: float = 15,
    user: str | None = None,
    cwd: str | None = None,
    env_extra: dict[str, str] | None = None,
    check: bool = False,
    probe: bool = False,
    wait: ClientWait = CLIENT_WAIT,
) -> subprocess.CompletedProcess[str]:
    """Run a command with SLURM_CONF set; as ``user`` (via runuser, with only SLURM_CONF and
    ``env_extra`` set) when given. ``timeout_s`` is the nominal bound of one attempt, scaled to the
    machine's load (``ClientWait`` in slurm_gpu/adapters/slurm/runner.py); a read-only query is asked
    again once after a timeout.
    SlurmUnreachable when no attempt finishes in time; with ``check``, SubmitError on a non-zero exit
    (one line, from the command's stderr). ``probe``: a quick liveness question (no floor, no retry).
    ``wait``: the table of bounds (tests shrink it)."""
    env = client_env(slurm_conf) | (env_extra or {})
    user_env = {"SLURM_CONF": slurm_conf} | dict(sorted((env_extra or {}).items()))
    bound = attempt_s(timeout_s, probe=probe, wait=wait)
    retries = wait.read_retries if is_read_only(argv) and not probe else 0
    for _ in range(retries):
        try:
            return run_slurm(argv, env=env, timeout_s=bound, cwd=cwd, user=user, user_env=user_env, check=check)
        except SlurmUnreachable:
            continue  # a busy machine: ask once more, within the same bound
    return run_slurm(argv, env=env, timeout_s=bound, cwd=cwd, user=user, user_env=user_env, check=check)


def ping(slurm_conf: str, timeout_s: float = 3) -> bool:
    from slurm_gpu.errors import SlurmGpuError

    try:
        r = run(["scontrol", "ping"], slurm_conf, timeout_s=timeout_s, probe=True)
    except SlurmGpuError:
        return False
    return "is UP" in r.stdout


def node_states(slurm_conf: str, timeout_s: float = 10) -> dict[str, str]:
    """node name -> state (lower case, with Slurm's suffix such as ``*`` or ``~``)."""
    r = run(["sinfo", "-h", "-N", "-o", "%N %T"], slurm_conf, timeout_s=timeout_s)
    out: dict[str, str] = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2:
            out[parts[0]] = parts[1].lower()  # one line per node per partition; same state
    return out


def job_state(slurm_conf: str, job_id: int | str, timeout_s: float = 10) -> str:
    """Current state name (``PENDING``, ``RUNNING``, ``COMPLETED``...); ``""`` if unknown."""
    r = run(["squeue", "-h", "-t", "all", "-j", str(job_id), "-o", "%T"], slurm_conf, timeout_s=timeout_s)
    state = r.stdout.strip().splitlines()
    if state:
        return state[0].strip()
    r = run(["sacct", "-n", "-X", "-P", "-j", str(job_id), "-o", "State"], slurm_conf, timeout_s=timeout_s)
    lines = r.stdout.strip().splitlines()
    return lines[0].split()[0] if lines else ""


def wait_job(
    slurm_conf: str, job_id: int | str, states: frozenset[str] | set[str] = FINAL_STATES, timeout_s: float = 60
) -> str:
    """Poll until the job reaches one of ``states`` (or any final state); return it. TimeoutError after
    ``timeout_s`` names the last state and reason."""
    deadline = time.monotonic() + timeout_s
    last = ""
    delay = 0.1
    while time.monotonic() < deadline:
        last = job_state(slurm_conf, job_id)  # each call bounded on its own (clients.run)
        if last in states or last in FINAL_STATES:
            return last
        time.sleep(delay)
        delay = min(delay * 1.5, 1.0)
    reason = run(["squeue", "-h", "-t", "all", "-j", str(job_id), "-o", "%T %r"], slurm_conf).stdout.strip()
    raise TimeoutError(f"job {job_id} not in {sorted(states)} after {timeout_s:g} s (now: {reason or last})")


def sbatch(
    argv: list[str], slurm_conf: str, *, user: str | None = None, cwd: str | None = None, timeout_s: float = 30
) -> int:
    """``sbatch --parsable ARGV``; returns the job id."""
    from slurm_gpu.errors import SubmitError

    r = run(["sbatch", "--parsable", *argv], slurm_conf, user=user, cwd=cwd, timeout_s=timeout_s, check=True)
    result = parse_parsable(r.stdout)
    if result is None:
        raise SubmitError(f"sbatch printed no job id: {r.stdout.strip()[:80]!r}")
    return result.job_id


def show_job(slurm_conf: str, job_id: int | str, timeout_s: float = 15) -> tuple[dict[str, str], list[NodeAlloc]]:
    """The job's record from squeue's JSON: (its fields in scontrol's names, the per-node allocations with
    CPU ids from the nodes' topology); SubmitError when Slurm has no record of it."""
    from slurm_gpu.errors import SubmitError

    nodes = run(["scontrol", "show", "node", "-o"], slurm_conf, timeout_s=timeout_s, check=True).stdout
    r = run(["squeue", "--json", "-t", "all", "-j", str(job_id)], slurm_conf, timeout_s=timeout_s, check=True)
    rec = job_from(read_jobs(r.stdout, topology_of(parse_node_records(nodes))), int(job_id))
    if rec is None:
        raise SubmitError(f"job {job_id}: squeue --json has no record of it")
    return dict(rec.fields), list(rec.allocs)


def job_records(slurm_conf: str, job_id: int | str, timeout_s: float = 15) -> list[dict[str, str]]:
    """The fields (scontrol's names, from squeue's JSON) of the job and of what belongs to it: the
    components of a heterogeneous job, the tasks of an array; in job id order, [] when Slurm has none."""
    base = str(job_id).split("_")[0]
    r = run(["squeue", "--json", "-t", "all", "-j", base], slurm_conf, timeout_s=timeout_s, check=True)
    return [dict(j.fields) for j in read_jobs(r.stdout).jobs
            if base in (j.fields["JobId"], j.fields.get("HetJobId"), j.fields.get("ArrayJobId"))]


__all__ = ["run", "ping", "node_states", "job_state", "wait_job", "sbatch", "show_job", "job_records", "client_env",
           "NodeAlloc",
           "FINAL_STATES", "GOOD_NODE_STATES"]
