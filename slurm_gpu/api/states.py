# SPDX-License-Identifier: Apache-2.0
"""A job's state as Slurm reports it (squeue -O or sacct -P), and its outcome, pure. The outcome is read
from Slurm's own state and reason, never guessed from elapsed time: timeout, preemption, node failure and
out-of-memory are Slurm states of their own (``OUTCOMES``)."""

from __future__ import annotations

from slurm_gpu.digits import is_digits
from slurm_gpu.plain import Record, record
from slurm_gpu.slurm.records import ACTIVE_STATES

# Slurm's final state -> the outcome the API reports (job.outcome); one table.
OUTCOMES: dict[str, str] = {
    "COMPLETED": "completed", "FAILED": "failed", "TIMEOUT": "timeout", "PREEMPTED": "preempted",
    "NODE_FAIL": "node_fail", "OUT_OF_MEMORY": "oom", "CANCELLED": "cancelled", "BOOT_FAIL": "boot_fail",
    "DEADLINE": "deadline", "REVOKED": "cancelled", "SPECIAL_EXIT": "failed",
}
# reasons that name the cause when the state alone does not (a FAILED job killed by the OOM killer on
# some releases, a job ended by its node)
REASON_OUTCOMES: dict[str, str] = {"OutOfMemory": "oom", "NodeDown": "node_fail", "NodeFail": "node_fail"}

# squeue -O fields read for every job (none of them user text): JobArrayID prints ``A_i`` for an array task
SQUEUE_FIELDS = ("JobArrayID", "State", "Reason", "RestartCnt", "exit_code", "PreemptTime", "Requeue")
SACCT_FIELDS = ("JobID", "State", "ExitCode", "Reason")


@record
class JobStatus(Record):
    """One job (or array task) as Slurm reports it; ``job_id`` ``123`` or ``123_4``."""

    job_id: str
    state: str
    reason: str | None = None
    restarts: int = 0
    exit_code: str = ""
    preempted_at: str | None = None  # squeue's PreemptTime when set
    source: str = "squeue"
    requeue: bool = False  # the job may be requeued (squeue's Requeue=1)

    @property
    def finished(self) -> bool:
        """Slurm's state is final; PREEMPTED only for a job that cannot be requeued (a requeueable
        preempted job comes back PENDING: PreemptMode=REQUEUE)."""
        if self.state == "PREEMPTED":
            return not self.requeue
        return self.state not in ACTIVE_STATES

    @property
    def outcome(self) -> str | None:
        """None while active; else one of OUTCOMES' values (``unknown`` for a state outside the table)."""
        if not self.finished:
            return None
        by_reason = REASON_OUTCOMES.get(self.reason or "")
        if self.state == "FAILED" and by_reason:
            return by_reason
        return OUTCOMES.get(self.state, "unknown")


def squeue_format() -> str:
    return ",".join(f"{f}:|" for f in SQUEUE_FIELDS)


def _unset(text: str) -> str | None:
    return None if text in ("", "N/A", "None", "Unknown", "(null)") else text


def parse_squeue(text: str) -> dict[str, JobStatus]:
    """``squeue -h -r -O squeue_format()`` -> job id -> JobStatus (lines of another shape are skipped)."""
    out: dict[str, JobStatus] = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) < len(SQUEUE_FIELDS):
            continue
        jid, state, reason, restarts, code, preempt, requeue = (p.strip() for p in parts[:len(SQUEUE_FIELDS)])
        if not jid or "[" in jid:
            continue
        out[jid] = JobStatus(jid, state.split()[0] if state else "UNKNOWN", _unset(reason),
                             int(restarts) if is_digits(restarts) and len(restarts) < 10 else 0, code,
                             _unset(preempt), requeue=requeue == "1")
    return out


def parse_sacct(text: str) -> dict[str, JobStatus]:
    """``sacct -X -n -P -o JobID,State,ExitCode,Reason`` -> job id -> JobStatus; the last record of a job
    id wins (a requeued job has one per run with -D; without it, its latest)."""
    out: dict[str, JobStatus] = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) < len(SACCT_FIELDS):
            continue
        jid, state, code, reason = (p.strip() for p in parts[:4])
        if not jid or "[" in jid:
            continue
        out[jid] = JobStatus(jid, state.split()[0] if state else "UNKNOWN", _unset(reason), 0, code, None,
                             source="sacct")
    return out


__all__ = ["JobStatus", "OUTCOMES", "REASON_OUTCOMES", "parse_squeue", "parse_sacct", "squeue_format",
           "SQUEUE_FIELDS", "SACCT_FIELDS"]
