# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu jobstats`` I/O: one sacct call through the one runner, the policy, then the pure core
(:mod:`slurm_gpu.cluster.jobstats`)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from slurm_gpu.errors import SlurmGpuError
from slurm_gpu.slurm.job_id import JobId, parse_job_id

if TYPE_CHECKING:
    from slurm_gpu.cluster.jobstats import JobstatsDoc
    from slurm_gpu.policy.model import Policy

JOB_ID_FORMS = ("array", "array_all", "het")  # sacct -j reads each of them
# AdminComment last: it is free text and may hold "|" (sacct -P does not escape it)
JOBSTATS_FIELDS = ("JobID", "JobIDRaw", "User", "Account", "Partition", "QOS", "State", "Submit", "Start", "End",
                   "Elapsed", "ElapsedRaw", "Timelimit", "NNodes", "NCPUS", "TotalCPU", "ReqMem", "AllocTRES",
                   "MaxRSS", "NodeList", "AdminComment")
SACCT_TIMEOUT_S = 60.0


def sacct_text(argv: list[str], env: Mapping[str, str] | None = None, timeout_s: float = SACCT_TIMEOUT_S) -> str:
    """stdout of one sacct call; a failure is one line (SubmitError / SlurmUnreachable)."""
    from slurm_gpu.adapters.slurm import SbatchCli, failure, run_slurm

    SbatchCli(env=env).preflight()
    proc = run_slurm(argv, env=env, timeout_s=timeout_s)
    if proc.returncode != 0:
        raise failure("sacct", proc.stderr, env, proc.returncode)
    return proc.stdout


@contextmanager
def sacct_lines(argv: list[str], env: Mapping[str, str] | None = None,
                timeout_s: float = SACCT_TIMEOUT_S) -> Iterator[Iterator[str]]:
    """stdout of one sacct call, line by line while sacct runs (the one runner's streaming call: the
    whole call within ``timeout_s``); a failure is one line (SubmitError / SlurmUnreachable), raised
    when the lines are done."""
    from slurm_gpu.adapters.slurm import SbatchCli, stream_slurm

    SbatchCli(env=env).preflight()
    with stream_slurm(argv, env=env, timeout_s=timeout_s, what="sacct") as lines:
        yield iter(lines)


def load_optional_policy(path_opt: str | None, env: Mapping[str, str] | None = None) -> Policy | None:
    """--policy, $GPUSUB_POLICY or /etc/slurm-gpu/policy.yaml; None when none applies."""
    from slurm_gpu.policy import load_policy
    from slurm_gpu.policy.reader import policy_path

    path = policy_path(path_opt, os.environ if env is None else env)
    return None if path is None else load_policy(path)


def normalise_job_id(text: str) -> str:
    """``123``, ``123_4``, ``123+1`` or ``123_*`` (the whole array: ``123``), in Slurm's range
    (:mod:`slurm_gpu.slurm.job_id`); anything else is a usage error."""
    return str(parse_job_id(text, JOB_ID_FORMS))


def rows_of(jid: JobId, rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """The rows that carry the id asked for; an answer that holds none of them (Slurm read another id)
    is an error of one line, never another job's figures."""
    mine = [r for r in rows if jid.carried_by_sacct(r)]
    if rows and not mine:
        raise SlurmGpuError(f"job {jid}: sacct answered for job {rows[0].get('JobID', '?')[:40]} instead; not shown")
    return mine


def gather(job_id: str, policy_opt: str | None = None, env: Mapping[str, str] | None = None) -> JobstatsDoc:
    """The jobstats document of JOBID (an array's base id: every task)."""
    from slurm_gpu.cluster.jobstats import jobstats
    from slurm_gpu.slurm.sacct import parse_sacct

    parsed = parse_job_id(job_id, JOB_ID_FORMS)
    jid = str(parsed)
    policy = load_optional_policy(policy_opt, env)
    text = sacct_text(["sacct", "-a", "-P", "-j", jid, f"--format={','.join(JOBSTATS_FIELDS)}"], env)
    rows = rows_of(parsed, parse_sacct(text))
    doc = jobstats(rows, policy)
    if not doc["jobs"]:
        raise SlurmGpuError(f"job {job_id}: unknown to accounting (sacct -j {jid} lists nothing)")
    return doc


__all__ = ["gather", "sacct_text", "sacct_lines", "load_optional_policy", "normalise_job_id", "rows_of",
           "JOBSTATS_FIELDS"]
