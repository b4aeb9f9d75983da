# SPDX-License-Identifier: Apache-2.0
"""``gpusub --wait``: follow a job to its end with a live state line; return its exit code.

On a terminal the line is rewritten in place; otherwise a line is printed each time it changes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import IO

from slurm_gpu.errors import SubmitError
from slurm_gpu.ports import JobWatch
from slurm_gpu.slurm.records import JobState


def state_line(job: JobState) -> str:
    """``job 42: PENDING (Resources)``, ``job 42: RUNNING on h100n1 since 2026-... (00:01:07)``."""
    text = f"job {job.job_id}: {job.state}"
    if job.state == "PENDING":
        if job.reason:
            text += f" ({job.reason})"
        if job.start_time and job.start_time not in ("Unknown", "None"):
            text += f", expected start {job.start_time}"
    elif job.node_list and job.node_list not in ("(null)", ""):
        text += f" on {job.node_list}"
        if job.start_time:
            text += f" since {job.start_time}"
        if job.run_time:
            text += f" ({job.run_time})"
    if job.finished and job.exit_code is not None:
        text += f", exit code {job.exit_code}" + (f" signal {job.exit_signal}" if job.exit_signal else "")
    return text


def job_exit_code(job: JobState) -> int:
    """The job's own exit code; 128+signal if killed by one; 1 if it ended badly without a code."""
    if job.exit_signal:
        return 128 + job.exit_signal
    if job.exit_code:
        return job.exit_code
    return 0 if job.state == "COMPLETED" else 1


def follow_job(backend: JobWatch, job_id: int, out: IO[str], interval_s: float = 1.0,
               sleep: Callable[[float], None] = time.sleep, max_misses: int = 5) -> int:
    """Poll ``backend.job_state`` until the job ends; returns its exit code.

    A miss is one poll that gave no state: Slurm did not answer (SubmitError) or no longer knows the
    job (None). Each miss counts once; after more than ``max_misses`` misses in a row the last real
    error is raised (the message Slurm gave, not a generic one)."""
    tty = bool(getattr(out, "isatty", lambda: False)())
    last: tuple[object, ...] = ()
    misses = 0
    last_error: SubmitError | None = None
    while True:
        try:
            job = backend.job_state(job_id)
        except SubmitError as exc:
            job, last_error = None, exc
        if job is None:
            misses += 1
            if misses > max_misses:
                if last_error is not None:
                    raise type(last_error)(f"job {job_id}: no state after {misses} tries; last error: "
                                           f"{last_error}") from last_error
                raise SubmitError(f"job {job_id}: Slurm no longer knows it (MinJobAge passed?); "
                                  f"check sacct -j {job_id}")
            sleep(interval_s)
            continue
        misses, last_error = 0, None
        line = state_line(job)
        key = (job.state, job.reason, job.node_list, job.start_time)
        if tty:
            out.write("\r\x1b[K" + line)
        elif key != last:
            out.write(line + "\n")
        out.flush()
        last = key
        if job.finished:
            if tty:
                out.write("\n")
            return job_exit_code(job)
        sleep(interval_s)


__all__ = ["follow_job", "state_line", "job_exit_code"]
