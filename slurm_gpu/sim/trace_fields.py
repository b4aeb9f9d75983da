# SPDX-License-Identifier: Apache-2.0
"""What every trace reader shares (pure): the records (:class:`TraceJob`, :class:`Trace`), the error
(:class:`TraceError`), the field readers whose errors say ``file:line:column: why``, and the CSV front
(header, empty file, csv's own errors). ``sim/traces.py`` (CSV, sacct, SWF) and ``sim/alibaba.py`` read
with them; ``sim/traces.py`` re-exports the records, so ``from slurm_gpu.sim.traces import TraceJob``
keeps working."""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Protocol

from slurm_gpu.errors import SlurmGpuError
from slurm_gpu.plain import NamedTuple

MAX_LINE = 65536  # characters in one line of a trace
MAX_JOBS = 5_000_000  # jobs in one trace (a few GB of records at most)


class TraceError(SlurmGpuError):
    """A trace that cannot be read (exit code 1); the message is one line, ``file:line:column: why``."""


class TraceJob(NamedTuple):
    """One job of a trace, in seconds since the epoch (UTC). ``None``: the trace does not say."""

    job_id: str
    submit: int
    duration: int  # seconds the job ran in the trace
    gpus: int = 0  # whole GPUs (total); 1 with a gpu_fraction
    nodes: int | None = None
    cpus: int | None = None
    user: str | None = None
    account: str | None = None
    partition: str | None = None
    qos: str | None = None
    gpu_type: str | None = None
    gpu_fraction: float | None = None
    time_limit_s: int | None = None  # as recorded; None: derive (time_limit_rule)
    state: str | None = None
    start: int | None = None  # as recorded (validation only)
    line: int = 0


class Trace(NamedTuple):
    """The jobs of a trace, how its times were written, and how many jobs were skipped."""

    jobs: tuple[TraceJob, ...]
    time_format: str  # "epoch" or a strftime format
    skipped: int = 0


_DT_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S.%f")
_EPOCH_RE = r"^-?[0-9]{1,12}(?:\.[0-9]{0,9})?$"
_EMPTY = ("", "nan", "none", "unknown", "null", "na")


class Where:
    """Where a reader is in a trace (file name, line, the header's columns), for ``file:line:column`` errors."""

    __slots__ = ("name", "line", "columns")

    def __init__(self, name: str, columns: list[str]) -> None:
        self.name, self.line, self.columns = name, 0, columns

    def error(self, column: str, why: str) -> TraceError:
        col = self.columns.index(column) + 1 if column in self.columns else 0
        return TraceError(f"{self.name}:{self.line}:{col}: {column}: {why}")


def is_empty(text: str | None) -> bool:
    """An empty cell, or one of the words the public traces write for none (``nan``, ``NULL``, ...)."""
    return text is None or text.strip().lower() in _EMPTY


def read_time(text: str, where: Where, column: str, fmt: list[str]) -> int:
    """Epoch seconds from a datetime (UTC) or an epoch number; ``fmt`` records the form first seen."""
    t = text.strip()
    if re.match(_EPOCH_RE, t):
        if not fmt:
            fmt.append("epoch")
        return int(float(t))
    for f in _DT_FORMATS:
        try:
            dt = datetime.strptime(t, f)
        except ValueError:
            continue
        if not fmt:
            fmt.append(f.replace(".%f", ""))
        return int(dt.replace(tzinfo=UTC).timestamp())
    raise where.error(column, f"bad time {t[:40]!r}: expected epoch seconds or YYYY-MM-DD[T ]HH:MM:SS")


def read_count(text: str, where: Where, column: str) -> int:
    """A whole number >= 0 (``4`` or ``4.0``)."""
    t = text.strip()
    try:
        value = int(float(t)) if re.match(r"^[0-9]{1,12}(?:\.0*)?$", t) else -1
    except ValueError:
        value = -1
    if value < 0:
        raise where.error(column, f"bad count {t[:40]!r}: expected a whole number >= 0")
    return value


def capped_lines(lines: Iterable[str], name: str) -> Iterator[str]:
    """The lines, refusing one over MAX_LINE characters."""
    for n, line in enumerate(lines, 1):
        if len(line) > MAX_LINE:
            raise TraceError(f"{name}:{n}:1: line longer than {MAX_LINE} characters")
        yield line


def finish(jobs: list[TraceJob], fmt: list[str], skipped: int, name: str) -> Trace:
    """The trace a reader read (an error when it holds no job)."""
    if not jobs:
        raise TraceError(f"{name}:1:1: no job in the trace")
    return Trace(tuple(jobs), fmt[0] if fmt else "epoch", skipped)


def check_count(jobs: list[TraceJob], where: Where) -> None:
    """Before each job is added: refuse a trace of more than MAX_JOBS jobs."""
    if len(jobs) >= MAX_JOBS:
        raise TraceError(f"{where.name}:{where.line}:1: more than {MAX_JOBS} jobs")


class CsvRows(Protocol):
    """csv.reader's rows as a parser reads them: the rows, and the line the last one ended on."""

    @property
    def line_num(self) -> int: ...

    def __iter__(self) -> Iterator[list[str]]: ...

    def __next__(self) -> list[str]: ...


def read_csv_trace(lines: Iterable[str], name: str, parse: Callable[[CsvRows, str, list[str]], Trace]) -> Trace:
    """``parse(rows, name, header)`` over the CSV rows of ``lines`` (header lower-cased); csv's own errors
    (a NUL byte, a quoted field over csv's field size limit) and an empty file as ``name:line:1: ...``."""
    rows = csv.reader(capped_lines(lines, name))
    try:
        try:
            header = [h.strip().lower() for h in next(rows)]
        except StopIteration:
            raise TraceError(f"{name}:1:1: empty trace") from None
        return parse(rows, name, header)
    except csv.Error as exc:
        raise TraceError(f"{name}:{rows.line_num}:1: {exc}") from None


__all__ = ["MAX_LINE", "MAX_JOBS", "TraceError", "TraceJob", "Trace", "Where", "is_empty", "read_time", "read_count",
           "finish", "check_count", "capped_lines", "read_csv_trace", "CsvRows"]
