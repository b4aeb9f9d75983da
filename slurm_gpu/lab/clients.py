# SPDX-License-Identifier: Apache-2.0
"""Slurm client calls for the lab, each under a timeout (a client hangs ~9 s when slurmctld is down).

Used by ``slurm-gpu lab``, the demo and the test fixtures: run as root or as the unprivileged lab
user, poll job states with a deadline (never a fixed sleep), parse ``scontrol -d show job``.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass

from slurm_gpu.errors import SlurmGpuError, SlurmUnreachable

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
) -> subprocess.CompletedProcess[str]:
    """Run a Slurm client with SLURM_CONF set; as ``user`` (via runuser) when given.

    Raises SlurmUnreachable when the command does not finish within ``timeout_s``; with ``check``,
    SlurmGpuError on a non-zero exit (the message carries the command's stderr)."""
    env = client_env(slurm_conf)
    env.update(env_extra or {})
    full = list(argv)
    if user and user != "root":
        extra = [f"{k}={v}" for k, v in sorted((env_extra or {}).items())]
        full = ["runuser", "-u", user, "--", "env", f"SLURM_CONF={slurm_conf}", *extra, *argv]
    try:
        r = subprocess.run(full, capture_output=True, text=True, timeout=timeout_s, cwd=cwd, env=env, check=False)
    except subprocess.TimeoutExpired as e:
        raise SlurmUnreachable(f"{argv[0]} did not answer within {timeout_s:g} s: {' '.join(argv)}") from e
    if check and r.returncode != 0:
        msg = (r.stderr or r.stdout).strip().splitlines()
        raise SlurmGpuError(f"{' '.join(argv)} failed (exit {r.returncode}): {msg[-1] if msg else ''}")
    return r


def ping(slurm_conf: str, timeout_s: float = 3) -> bool:
    try:
        r = run(["scontrol", "ping"], slurm_conf, timeout_s=timeout_s)
    except SlurmUnreachable:
        return False
    return "is UP" in r.stdout


def node_states(slurm_conf: str, timeout_s: float = 5) -> dict[str, str]:
    """node name -> state (lower case, with Slurm's suffix such as ``*`` or ``~``)."""
    r = run(["sinfo", "-h", "-N", "-o", "%N %T"], slurm_conf, timeout_s=timeout_s)
    out: dict[str, str] = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2:
            out[parts[0]] = parts[1].lower()  # one line per node per partition; same state
    return out


def job_state(slurm_conf: str, job_id: int | str, timeout_s: float = 5) -> str:
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
        last = job_state(slurm_conf, job_id)
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
    r = run(["sbatch", "--parsable", *argv], slurm_conf, user=user, cwd=cwd, timeout_s=timeout_s, check=True)
    return int(r.stdout.strip().split(";")[0])


@dataclass(frozen=True)
class NodeAlloc:
    """One detail line of ``scontrol -d show job``: the CPUs and GPUs a job holds on one node."""

    nodes: str
    cpu_ids: str
    gres: str

    @property
    def gpu_indices(self) -> tuple[int, ...]:
        from slurm_gpu.cpulist import parse_cpulist

        m = re.search(r"IDX:([0-9,\-]+)", self.gres)
        return parse_cpulist(m.group(1)) if m else ()


_KV = re.compile(r"(\S+?)=(\S*)")


def show_job(slurm_conf: str, job_id: int | str, timeout_s: float = 5) -> tuple[dict[str, str], list[NodeAlloc]]:
    """``scontrol -d show job``: (key -> value of the job record, the per-node detail lines)."""
    r = run(["scontrol", "-d", "show", "job", str(job_id)], slurm_conf, timeout_s=timeout_s, check=True)
    fields: dict[str, str] = {}
    allocs: list[NodeAlloc] = []
    for line in r.stdout.splitlines():
        s = line.strip()
        if s.startswith("Nodes=") and "CPU_IDs=" in s:
            kv = dict(_KV.findall(s))
            allocs.append(NodeAlloc(kv.get("Nodes", ""), kv.get("CPU_IDs", ""), kv.get("GRES", "")))
            continue
        for k, v in _KV.findall(s):
            fields.setdefault(k, v)
    return fields, allocs
