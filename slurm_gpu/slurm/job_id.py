# SPDX-License-Identifier: Apache-2.0
"""The one parser of the job ids a user gives a verb (``why``, ``jobstats``, ``report --jobs``), and the check
that a record Slurm returned carries the id asked for. Pure.

Slurm's facts (slurm.conf(5) ``MaxJobId``, ``MaxArraySize``; slurm.h): a job id is an unsigned 32-bit
number, the low 26 bits the local id (at most 67,108,863) and the high 6 the origin cluster of a
federated job (1..63), so ids reach 0xFFFFFFFF; 0xFFFFFFFE (``NO_VAL``) and 0xFFFFFFFF (``INFINITE``)
are no job, and ``0`` means *every* job to ``scontrol show job`` and ``sacct -j``. Larger numbers wrap to
32 bits in the clients (``scontrol show job 4294967297`` shows job 1). So an id is 1..4,294,967,293,
written with ASCII digits only; an array task index is 0..4,000,000 (``MaxArraySize`` may not exceed
4,000,001); a heterogeneous job's component offset is 0..127 (``MAX_HET_JOB_COMPONENTS`` 128).
"""

from __future__ import annotations

from collections.abc import Mapping

from slurm_gpu.digits import ascii_int
from slurm_gpu.errors import UsageError
from slurm_gpu.plain import NamedTuple

MAX_JOB_ID = 0xFFFFFFFD  # NO_VAL - 1
MAX_ARRAY_TASK = 4_000_000
MAX_HET_OFFSET = 127
FORMS = {"array": "an array task 1234_5", "array_all": "a whole array 1234_*", "het": "a hetjob component 1234+1"}


class JobId(NamedTuple):
    """``1234``, ``1234_5`` (array task), ``1234_*`` (the whole array: every task, as ``1234``) or
    ``1234+1`` (component 1 of heterogeneous job 1234)."""

    job: int
    task: int | None = None
    het: int | None = None

    def __str__(self) -> str:
        return str(self.job) + (f"_{self.task}" if self.task is not None else "") + (
            f"+{self.het}" if self.het is not None else "")

    def carried_by(self, record: Mapping[str, str]) -> bool:
        """True when an ``scontrol show job -o`` record (parsed) is this job: ``1234`` is the job, the
        array or the hetjob of that id; ``1234_5`` the array's task 5; ``1234+1`` the hetjob's component 1."""
        job = str(self.job)
        if self.task is not None:
            return record.get("ArrayJobId") == job and _in_index_set(self.task, record.get("ArrayTaskId", ""))
        if self.het is not None:
            return record.get("HetJobId") == job and record.get("HetJobOffset") == str(self.het)
        return job in (record.get("JobId"), record.get("ArrayJobId"), record.get("HetJobId"))

    def carried_by_sacct(self, row: Mapping[str, str]) -> bool:
        """The same for one ``sacct -P`` row (``JobID`` ``1234``, ``1234_5``, ``1234_[1-3]``, ``1234+1``,
        each with steps ``.batch``, ``.0``; ``JobIDRaw`` the component's own id)."""
        base = row.get("JobID", "").split(".", 1)[0]
        if self.task is not None or self.het is not None:
            return base == str(self)
        job = str(self.job)
        return job in (base, row.get("JobIDRaw", "").split(".", 1)[0]) or base.startswith((job + "_", job + "+"))


def _in_index_set(index: int, text: str) -> bool:
    """``5`` in Slurm's ArrayTaskId text: ``5``, ``1-9``, ``1-9:2``, ``1,5,7``, ``1-9%2``."""
    for part in text.split("%", 1)[0].split(","):
        span, _, step_text = part.partition(":")
        lo_text, dash, hi_text = span.partition("-")
        lo, hi = ascii_int(lo_text, MAX_ARRAY_TASK), ascii_int(hi_text, MAX_ARRAY_TASK) if dash else None
        step = ascii_int(step_text, MAX_ARRAY_TASK) if step_text else 1
        if lo is None or step is None or step < 1:
            continue
        if (index == lo) if hi is None else (lo <= index <= hi and (index - lo) % step == 0):
            return True
    return False


def _accepted(forms: tuple[str, ...]) -> str:
    return ", ".join([f"a job id 1234 (1 to {MAX_JOB_ID})"] + [FORMS[f] for f in forms])


def parse_job_id(text: str, forms: tuple[str, ...] = ("array", "het")) -> JobId:
    """A job id as the user wrote it -> :class:`JobId`; anything else (0, an id past Slurm's range, a
    non-ASCII digit, a form the verb does not take) is a UsageError of one line naming the forms."""
    if not isinstance(text, str):
        raise UsageError(f"JOBID {text!r:.40}: not a Slurm job id; accepted: {_accepted(forms)}")
    head, task_text, het_text = text, None, None
    if "_" in text and ("array" in forms or "array_all" in forms):
        head, _, task_text = text.partition("_")
    elif "+" in text and "het" in forms:
        head, _, het_text = text.partition("+")
    job = ascii_int(head, MAX_JOB_ID, max_len=10)
    task = ascii_int(task_text, MAX_ARRAY_TASK, max_len=7) if task_text is not None and "array" in forms else None
    whole_array = task_text == "*" and "array_all" in forms
    het = ascii_int(het_text, MAX_HET_OFFSET, max_len=3) if het_text is not None else None
    if job is None or job < 1 or (task_text is not None and task is None and not whole_array) or (
            het_text is not None and het is None):
        raise UsageError(f"JOBID {text[:40]!r}: not a Slurm job id; accepted: {_accepted(forms)}")
    return JobId(job, task, het)


__all__ = ["JobId", "parse_job_id", "MAX_JOB_ID", "MAX_ARRAY_TASK", "MAX_HET_OFFSET"]
