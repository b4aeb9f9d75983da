# SPDX-License-Identifier: Apache-2.0
"""The controller-side checkpoint hook's decision, pure: the facts of a job that just ended, the policy
and what its checkpoint directory holds -> requeue it, leave it (with the reason, for the log) or
nothing (not a job this hook is for). docs/checkpointing.md, "The controller-side hook".

The hook catches jobs that could not requeue themselves: preempted under ``PreemptMode=CANCEL``, a
node failure of a job without ``--requeue``, or a job killed at its time limit or at the end of a
preemption's grace time. Slurm already requeues a job that is preempted under ``PreemptMode=REQUEUE``
or that loses a node with ``--requeue``, and the rendered script requeues itself on a time-limit stop
it survives; then the job's restart count has moved on by the time the hook runs, and it does nothing.

What the hook sees (measured on Slurm 22.05.8): ``squeue -O State`` says ``COMPLETING`` (as scontrol does)
while EpilogSlurmctld runs, whatever the end was; the end shows in ``Reason=`` (``TimeLimit``,
``NodeDown``), ``PreemptTime=`` (set for a preemption) and ``Restarts=`` (one more than the
environment's ``SLURM_JOB_RESTART_COUNT`` when Slurm or the job requeued it already). A base state
(``TIMEOUT``, ``PREEMPTED``, ...) is used as it is where a release shows one; ``FAILED`` is read as
``COMPLETING`` is.

A preempted job killed at its start (measured on 22.05.8): under ``PreemptParameters=send_user_signal``
(22.05: ``SlurmctldParameters=preempt_send_user_signal``) a preemption sends the job's ``--signal`` to the
batch shell at once. When it lands before bash has run the script's first line (its trap), bash dies of it:
the job ends FAILED with ExitCode ``0:12`` (SIGUSR2), ``Reason=JobLaunchFailure``, PreemptTime set and the
restart count unchanged, and Slurm does not requeue it, where a job without the signal would have run on
and been requeued at the end of the grace time. The hook requeues such a job in a partition the policy
makes preemptible (``PreemptMode=REQUEUE``), within max_requeues, with or without a checkpoint: the
signal is read from Slurm's record of the end (``SLURM_JOB_EXIT_CODE2``, squeue's ExitCode), which the
job's user cannot write; a shell that ran its trap does not die of the signal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Literal

from slurm_gpu.checkpoint.markers import Marker, Step, complete_steps
from slurm_gpu.plain import Record, record

if TYPE_CHECKING:
    from slurm_gpu.policy.model import Policy

Action = Literal["requeue", "leave", "none"]
Cause = Literal["preemption", "node-failure", "time-limit"]
CKPT_SUBDIR = ".gpusub-ckpt"  # the job's checkpoint directory is <work dir>/.gpusub-ckpt/<job id>
MAX_JOB_ID = 10 ** 12
MISSING = "missing"  # CkptView.problem of a directory that does not exist (the job has no protocol)

# Base states a release may show, and what they mean here.
_CAUSE_OF_STATE: dict[str, Cause] = {"PREEMPTED": "preemption", "NODE_FAIL": "node-failure",
                                     "BOOT_FAIL": "node-failure", "TIMEOUT": "time-limit"}
_NODE_REASONS = frozenset({"NodeDown", "NodeFail", "BootFail"})
_ENDED = frozenset({"COMPLETING", "FAILED"})  # read from Reason/PreemptTime (22.05 shows COMPLETING)
# The checkpoint protocol's stop signals (checkpoint/contract.py STOP_SIGNALS) but TERM, by their Linux
# numbers (signal(7), x86 and arm), as Slurm's ExitCode ``RC:SIG`` gives them: a batch shell one of them
# ended was killed before its trap. TERM is left out: it is Slurm's own kill (grace end, cancel).
EARLY_STOP_SIGNALS: dict[int, str] = {1: "HUP", 2: "INT", 10: "USR1", 12: "USR2"}
_NOT_ENDED = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RUNNING", "SUSPENDED",
                        "CONFIGURING", "RESIZING", "SIGNALING", "STAGE_OUT", "EXPEDITING"})  # EXPEDITING: 25.11


@record
class JobFacts(Record):
    """What the hook knows of the job: Slurm's EpilogSlurmctld environment (``env_*``) and
    ``squeue -O`` (the rest: :func:`slurm_gpu.slurm.records.parse_squeue_job`). ``start_s``: the ended run's
    StartTime, seconds since the epoch."""

    job_id: int
    uid: int
    env_restarts: int | None  # SLURM_JOB_RESTART_COUNT: the ended run's restart count
    partition: str = ""
    work_dir: str = ""
    state: str = ""  # JobState= (COMPLETING while the hook runs, on 22.05)
    reason: str = ""  # Reason=
    restarts: int | None = None  # Restarts= now (moved on when the job was requeued already)
    preempted: bool = False  # PreemptTime= is set
    requeue: bool = True  # Requeue=1 (a job submitted with --no-requeue cannot be requeued)
    batch: bool = True  # BatchFlag=1 (only batch jobs can be requeued)
    start_s: float | None = None
    exit_signal: int | None = None  # the signal that ended the batch shell (ExitCode RC:SIG), 0: none

    @property
    def ckpt_dir(self) -> str | None:
        """<work dir>/.gpusub-ckpt/<job id>, the directory the rendered script made (None: no work dir)."""
        if not self.work_dir.startswith("/"):
            return None
        return f"{self.work_dir.rstrip('/')}/{CKPT_SUBDIR}/{self.job_id}"


@record
class PolicyFacts(Record):
    """What the hook needs of the policy."""

    max_requeues: int
    checkpoint_partitions: frozenset[str] = frozenset()  # partitions of classes with checkpoint_required
    requeue_partitions: frozenset[str] = frozenset()  # preemptible partitions (PreemptMode=REQUEUE)


@record
class CkptView(Record):
    """The job's checkpoint directory as read: ``problem`` says why it could not be read (missing, a
    symlink, another user's, ...); ``markers`` are the valid markers (the reader skipped the rest)."""

    exists: bool = False
    problem: str = ""
    markers: tuple[Marker, ...] = ()


@record
class Decision(Record):
    action: Action
    reason: str
    cause: Cause | None = None
    restarts: int | None = None  # the restart count the decision used
    step: Step | None = None  # the resume point, when there is one


def policy_facts(policy: Policy) -> PolicyFacts:
    """The policy's ``defaults.max_requeues``, the partitions its checkpoint_required classes use and its
    preemptible partitions."""
    parts = frozenset(c.partition for c in policy.classes if c.checkpoint_required)
    return PolicyFacts(max_requeues=int(policy.defaults.max_requeues), checkpoint_partitions=parts,
                       requeue_partitions=frozenset(p.name for p in policy.partitions if p.preemptible))


def _int(text: str | None, hi: int = 1 << 31) -> int | None:
    t = (text or "").strip()
    return int(t) if t.isascii() and t.isdigit() and len(t) <= 13 and int(t) <= hi else None


def exit_signal_of(text: str | None) -> int | None:
    """The signal of Slurm's ``RC:SIG`` exit code (``0:12`` -> 12, ``1:0`` -> 0); None when unreadable."""
    rc, colon, sig = (text or "").strip().partition(":")
    return _int(sig, 255) if colon and _int(rc, 255) is not None else None


def facts_from(env: Mapping[str, str], record: Mapping[str, str], start_s: float | None) -> JobFacts | None:
    """JobFacts from the hook's environment and the job's record (``squeue -O``, parsed); None when the
    environment names no job (SLURM_JOB_ID, SLURM_JOB_UID). The environment wins for who the job is;
    the record must be the same job."""
    job_id, uid = _int(env.get("SLURM_JOB_ID"), MAX_JOB_ID), _int(env.get("SLURM_JOB_UID"))
    if job_id is None or uid is None:
        return None
    if record and _int(record.get("JobId"), MAX_JOB_ID) != job_id:
        record = {}
    preempt = record.get("PreemptTime", "None")
    # the signal that ended it: slurmctld's EpilogSlurmctld variable and squeue's record must agree
    # where both give one (a release that shows another value in one of them: no signal, nothing new done)
    given = {exit_signal_of(env.get("SLURM_JOB_EXIT_CODE2")), exit_signal_of(record.get("ExitCode"))} - {None}
    signal = given.pop() if len(given) == 1 else None
    return JobFacts(
        job_id=job_id, uid=uid, env_restarts=_int(env.get("SLURM_JOB_RESTART_COUNT")),
        partition=env.get("SLURM_JOB_PARTITION") or record.get("Partition", ""),
        work_dir=env.get("SLURM_JOB_WORK_DIR") or record.get("WorkDir", ""),
        state=record.get("JobState", ""), reason=record.get("Reason", ""),
        restarts=_int(record.get("Restarts")),
        preempted=bool(preempt) and preempt not in ("None", "Unknown", "(null)"),
        requeue=record.get("Requeue", "1") != "0", batch=record.get("BatchFlag", "1") != "0", start_s=start_s,
        exit_signal=signal)


def cause_of(job: JobFacts) -> tuple[Cause | None, str]:
    """Why the run ended, when it is an end this hook catches; else (None, what happened instead)."""
    if job.state == "" or job.restarts is None:
        return None, "Slurm gave no record of the job"
    if job.env_restarts is None:
        return None, "no SLURM_JOB_RESTART_COUNT: cannot tell whether the job was requeued already"
    if job.restarts > job.env_restarts:
        return None, f"requeued already (restart count {job.env_restarts} -> {job.restarts}, by Slurm or the job)"
    if job.state in _NOT_ENDED:
        return None, f"the job is {job.state}"
    if job.state in _CAUSE_OF_STATE:
        cause: Cause | None = _CAUSE_OF_STATE[job.state]
    elif job.state in _ENDED:
        cause = ("preemption" if job.preempted else "node-failure" if job.reason in _NODE_REASONS
                 else "time-limit" if job.reason == "TimeLimit" else None)
    else:
        cause = None
    if cause is None:
        return None, f"ended on its own or was cancelled (state {job.state}, reason {job.reason or '-'})"
    return cause, cause


def _fresh(markers: Iterable[Marker], job: JobFacts) -> tuple[Step | None, Step | None]:
    """(newest complete step of this job, that step when it was completed during the ended run)."""
    own = [m for m in markers if m.job_id is None or m.job_id == str(job.job_id)]
    steps = complete_steps(own)
    newest = steps[0] if steps else None
    if newest is None or job.start_s is None or newest.time < job.start_s:
        return newest, None
    return newest, newest


def killed_at_start(job: JobFacts, cause: Cause | None, policy: PolicyFacts | None) -> str | None:
    """The stop signal's name when the job is a preempted one that its stop signal killed before its
    script's trap (module docstring), in a partition the policy makes preemptible; else None."""
    if cause != "preemption" or policy is None or job.partition not in policy.requeue_partitions:
        return None
    return EARLY_STOP_SIGNALS.get(job.exit_signal or 0)


def _requeue_killed_at_start(job: JobFacts, policy: PolicyFacts, ckpt: CkptView | None, sig: str) -> Decision:
    """A preempted job killed by SIG``sig`` at its start: requeued as Slurm's REQUEUE preemption would have
    (resuming from its newest complete checkpoint, if any), within max_requeues."""
    cause: Cause = "preemption"
    what = f"killed by SIG{sig} (ExitCode 0:{job.exit_signal}) before its script's trap"
    if ckpt is not None and ckpt.problem not in ("", MISSING):
        return Decision("leave", f"{cause}: {what}; {ckpt.problem} ({job.ckpt_dir}); not requeued", cause)
    if not job.batch:
        return Decision("leave", f"{cause}: {what}; not a batch job; not requeued", cause)
    if not job.requeue:
        return Decision("leave", f"{cause}: {what}; submitted with --no-requeue (Requeue=0); not requeued", cause)
    markers = ckpt.markers if ckpt is not None and ckpt.exists else ()
    restarts = max(job.env_restarts or 0, max((m.restart_count for m in markers), default=0))
    if restarts >= policy.max_requeues:
        return Decision("leave", f"{cause}: {what}; restarted {restarts} times, the policy's maximum is "
                        f"max_requeues={policy.max_requeues}; not requeued", cause, restarts)
    newest, _ = _fresh(markers, job)
    resume = f"resume from step {newest.step} ({newest.path})" if newest is not None else "it starts over"
    return Decision("requeue", f"{cause}: {what}; requeued (restart {restarts + 1} of at most "
                    f"{policy.max_requeues}) as Slurm's PreemptMode=REQUEUE would have; {resume}", cause, restarts,
                    newest)


def decide(job: JobFacts, policy: PolicyFacts | None, ckpt: CkptView | None) -> Decision:
    """Requeue the job, leave it (why) or nothing. ``policy`` None: no policy could be read; ``ckpt``
    None: the directory was not looked at (the job is no candidate)."""
    cause, why = cause_of(job)
    if cause is None:
        return Decision("none", why)
    sig = killed_at_start(job, cause, policy)
    if sig is not None and policy is not None:
        return _requeue_killed_at_start(job, policy, ckpt, sig)
    in_ckpt_partition = policy is not None and job.partition in policy.checkpoint_partitions
    if ckpt is None or not ckpt.exists:
        hostile = ckpt is not None and ckpt.problem not in ("", MISSING)
        detail = ckpt.problem if ckpt is not None and hostile else "no checkpoint directory"
        if in_ckpt_partition or hostile:
            return Decision("leave", f"{cause}: {detail} ({job.ckpt_dir}); not requeued", cause)
        return Decision("none", f"{cause}: not a checkpointing job ({detail})", cause)
    if policy is None:
        return Decision("leave", f"{cause}: no site policy could be read; not requeued", cause)
    if not job.batch:
        return Decision("leave", f"{cause}: not a batch job; only batch jobs can be requeued", cause)
    if not job.requeue:
        return Decision("leave", f"{cause}: submitted with --no-requeue (Requeue=0); not requeued", cause)
    marked = max((m.restart_count for m in ckpt.markers), default=0)
    restarts = max(job.env_restarts or 0, marked)
    if restarts >= policy.max_requeues:
        return Decision("leave", f"{cause}: restarted {restarts} times, the policy's maximum is "
                        f"max_requeues={policy.max_requeues}; not requeued", cause, restarts)
    newest, fresh = _fresh(ckpt.markers, job)
    if fresh is None:
        what = ("no complete checkpoint marker" if newest is None else
                f"newest complete checkpoint (step {newest.step}) is older than this run's start")
        return Decision("leave", f"{cause}: {what}; not requeued", cause, restarts, newest)
    return Decision("requeue", f"{cause}: requeued (restart {restarts + 1} of at most {policy.max_requeues}); "
                    f"resume from step {fresh.step} ({fresh.path})", cause, restarts, fresh)


__all__ = ["JobFacts", "PolicyFacts", "CkptView", "Decision", "CKPT_SUBDIR", "MISSING", "policy_facts", "facts_from",
           "cause_of", "decide", "killed_at_start", "exit_signal_of", "EARLY_STOP_SIGNALS"]

