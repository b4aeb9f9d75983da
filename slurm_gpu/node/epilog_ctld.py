# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu-epilog-ctld``'s work: read the ended job's facts (Slurm's EpilogSlurmctld environment and
``squeue -O`` fields that hold no user text), its checkpoint directory and the policy, decide
(slurm_gpu/node/requeue.py), read the job again from squeue's JSON (a second, independent call: the
two must agree) and requeue the job (``scontrol requeue``) or log why not. docs/checkpointing.md, "The
controller-side hook"; docs/records.md.

It runs as SlurmUser (or root) for every job that ends, so it is cheap for jobs it has nothing to do with
(one ``squeue`` call), reads the user's directory without following the user's symlinks
(adapters/fs.py open_dir, then adapters/markers.py with the job's uid as the expected owner), never
writes there, and never raises: :func:`run` turns every problem into a log line.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

from slurm_gpu.adapters import fs
from slurm_gpu.node.model import DEFAULT_PATH
from slurm_gpu.node.requeue import (
    CKPT_SUBDIR,
    MISSING,
    CkptView,
    Decision,
    JobFacts,
    PolicyFacts,
    decide,
    facts_from,
)

# The keys the decision rests on, which both reads must give alike before a requeue (docs/records.md).
RECHECKED = ("JobState", "Reason", "Restarts", "PreemptTime", "Requeue", "BatchFlag", "StartTime", "Partition")

PROG = "slurm-gpu-epilog-ctld"
DEFAULT_LOG = "/var/log/slurm-gpu/epilog-ctld.log"
ENV_LOG = "SLURM_GPU_EPILOG_CTLD_LOG"
ENV_POLICY = "GPUSUB_POLICY"
SCONTROL_TIMEOUT_S = 15.0
Say = Callable[[str], None]


def client_env(env: Mapping[str, str]) -> dict[str, str]:
    """The Slurm clients' environment: the hook's, with a PATH when Slurm gave none."""
    out = dict(env)
    out.setdefault("PATH", DEFAULT_PATH)
    return out


def job_record(job_id: int, env: Mapping[str, str]) -> tuple[dict[str, str], str]:
    """``squeue -h -t all -j ID -O ...`` (fields that hold no user text; the work dir last), or ({}, why not)."""
    from slurm_gpu.adapters.slurm.runner import run_slurm
    from slurm_gpu.slurm.records import one_line, parse_squeue_job, squeue_format

    proc = run_slurm(["squeue", "-h", "-t", "all", "-j", str(job_id), "-O", squeue_format()], env=env,
                     timeout_s=SCONTROL_TIMEOUT_S)
    rec = parse_squeue_job(proc.stdout, job_id) if proc.returncode == 0 else None
    if rec is None:
        return {}, f"squeue -j {job_id}: {one_line(proc.stderr, f'exit {proc.returncode}, no record')}"
    rec["UserId"] = f"({rec['UserId']})"  # the uid, as facts_from and the recheck compare it
    return rec, ""


def recheck(job_id: int, first: Mapping[str, str], env: Mapping[str, str]) -> str:
    """The second read before a requeue: squeue's JSON (another format, another call; the reader user text
    cannot steer) must give the job the same :data:`RECHECKED` values and uid. "" when it does, else why not."""
    from slurm_gpu.adapters.slurm.runner import run_slurm
    from slurm_gpu.errors import SlurmGpuError
    from slurm_gpu.slurm.records import job_from, one_line, read_jobs

    proc = run_slurm(["squeue", "--json", "-t", "all", "-j", str(job_id)], env=env, timeout_s=SCONTROL_TIMEOUT_S)
    if proc.returncode != 0:
        return f"squeue --json -j {job_id}: {one_line(proc.stderr, f'exit {proc.returncode}')}"
    try:
        rec = job_from(read_jobs(proc.stdout), job_id)
    except SlurmGpuError as exc:
        return str(exc)
    if rec is None:
        return f"squeue --json has no record of job {job_id}"
    uid = rec.fields.get("UserId", "").rpartition("(")[2]
    differ = [k for k in RECHECKED  # a reason Slurm wrote as text may show "_" for its spaces in one of them
              if rec.fields.get(k, "").replace(" ", "_") != first.get(k, "").replace(" ", "_")]
    if uid != first.get("UserId", "").rpartition("(")[2]:
        differ.append("UserId")
    if differ:
        return "the two reads of the job differ in " + ", ".join(
            f"{k} ({first.get(k, '')[:40]!r} / {rec.fields.get(k, '')[:40]!r})" for k in differ)
    return ""


def epoch(text: str | None) -> float | None:
    """Slurm's local time stamp (2026-12-01T01:17:26) as seconds since the epoch; None for None/Unknown."""
    try:
        return time.mktime(time.strptime(text or "", "%Y-%m-%dT%H:%M:%S"))
    except (ValueError, OverflowError):
        return None


def read_ckpt(job: JobFacts, say: Say) -> CkptView:
    """The job's checkpoint directory: walked without following the user's symlinks, the last two
    components owned by the job's user, the markers read as the job's user's (owner, size, schema)."""
    from slurm_gpu.adapters.markers import read_markers  # only for a job with a checkpoint directory

    path = job.ckpt_dir
    if path is None:
        return CkptView(problem=MISSING)
    try:
        fd = fs.open_dir(path, trust=fs.LINKS)
    except FileNotFoundError:
        return CkptView(problem=MISSING)
    except OSError as exc:
        return CkptView(problem=str(exc.strerror or exc) if isinstance(exc, fs.Untrusted)
                        else f"cannot open {path}: {exc.strerror or exc}")
    warnings: list[str] = []
    try:
        st = os.fstat(fd)
        parent = os.stat("..", dir_fd=fd, follow_symlinks=False)
        for what, s in ((path, st), (os.path.dirname(path), parent)):
            if s.st_uid != job.uid:
                return CkptView(problem=f"{what} is owned by uid {s.st_uid}, not the job's user {job.uid}")
        listing = read_markers(fd, expected_uid=job.uid, warn=warnings.append)  # no path looked up again
    finally:
        os.close(fd)
    for w in warnings:
        say(f"job {job.job_id}: {path}: {w}")
    return CkptView(exists=True, markers=listing.markers)


def load_policy_facts(path: str, say: Say) -> PolicyFacts | None:
    from slurm_gpu.node.requeue import policy_facts
    from slurm_gpu.policy.load import load_policy

    try:
        return policy_facts(load_policy(path))
    except Exception as exc:  # noqa: BLE001 - any policy problem is one log line; the job is left alone
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        say(f"policy {path}: {text[:300]}")
        return None


def requeue(job_id: int, env: Mapping[str, str]) -> str:
    """``scontrol requeue ID``: "" when done, else why not (one line)."""
    from slurm_gpu.adapters.slurm.runner import run_slurm
    from slurm_gpu.slurm.records import one_line

    proc = run_slurm(["scontrol", "requeue", str(job_id)], env=env, timeout_s=SCONTROL_TIMEOUT_S)
    if proc.returncode == 0:
        return ""
    return f"scontrol requeue {job_id} failed (exit {proc.returncode}): {one_line(proc.stderr or proc.stdout, '')}"


def handle(env: Mapping[str, str], policy_path: str, say: Say, dry_run: bool = False,
           verbose: bool = False) -> Decision | None:
    """Decide about the job Slurm's environment names, act, log. None: the environment names no job."""
    probe = facts_from(env, {}, None)
    if probe is None:
        say(f"no job in the environment (SLURM_JOB_ID={env.get('SLURM_JOB_ID', '')[:40]!r}, "
            f"SLURM_JOB_UID={env.get('SLURM_JOB_UID', '')[:40]!r}); nothing done")
        return None
    cenv = client_env(env)
    record, problem = job_record(probe.job_id, cenv)
    if problem:
        say(f"job {probe.job_id}: {problem}")
    job = facts_from(env, record, epoch(record.get("StartTime")))
    assert job is not None
    first = decide(job, None, None)
    if first.action == "none" and first.cause is None:
        if verbose:
            say(f"job {job.job_id}: nothing to do: {first.reason}")
        return first
    ckpt = read_ckpt(job, say)
    policy = load_policy_facts(policy_path, say)
    decision = decide(job, policy, ckpt)
    if decision.action == "none":
        if verbose:
            say(f"job {job.job_id}: nothing to do: {decision.reason}")
        return decision
    if decision.action == "requeue":
        differ = recheck(job.job_id, record, cenv)
        if differ:
            decision = Decision("leave", f"{decision.cause}: {differ}; not requeued", decision.cause,
                                decision.restarts, decision.step)
    if decision.action == "requeue" and not dry_run:
        failed = requeue(job.job_id, cenv)
        if failed:
            decision = Decision("leave", f"{decision.cause}: {failed}", decision.cause, decision.restarts,
                                decision.step)
    say(f"job {job.job_id} (user {job.uid}, partition {job.partition or '-'}): "
        f"{'would requeue (dry run)' if dry_run and decision.action == 'requeue' else decision.action}: "
        f"{decision.reason}")
    return decision


def policy_path_from(env: Mapping[str, str], given: str | None) -> str:
    from slurm_gpu.policy.reader import DEFAULT_POLICY_PATH

    return given or env.get(ENV_POLICY) or DEFAULT_POLICY_PATH


__all__ = ["handle", "read_ckpt", "epoch", "job_record", "recheck", "RECHECKED", "requeue", "DEFAULT_LOG",
           "ENV_LOG", "PROG", "CKPT_SUBDIR", "policy_path_from"]
