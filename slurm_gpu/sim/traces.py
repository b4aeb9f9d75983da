# SPDX-License-Identifier: Apache-2.0
"""Trace readers: lines of text in, :class:`TraceJob` records out (pure; the caller opens the file).

Four formats (docs/simulate.md "Traces"); the fourth, Alibaba's pod lists, is in ``sim/alibaba.py``:

- ``csv``: the Slurm-native CSV of the public GPU traces (Helios, Acme): ``job_id, submit_time`` and a
  run time (``duration``, or ``start_time`` and ``end_time``); optional columns as in the docs. Times are
  UTC datetimes or epoch seconds; ``time_limit`` is Slurm's time grammar; ``vc`` is the account when
  there is no ``account``; ``queue`` (the recorded wait) is not an input.
- ``sacct``: ``sacct -P`` (``|``-separated, a header line); step rows (``123.batch``) are skipped.
- ``swf``: the Standard Workload Format (18 fields, ``;`` comments); processors are read as GPUs, the
  requested time (field 9) is the time limit.

A job that never started in the trace (no start time, or state ``CANCELLED`` with no run time) is
skipped and counted. Bad input raises :class:`TraceError` with one line ``file:line:column: why``.
Memory is bounded: lines over :data:`MAX_LINE` characters and traces over :data:`MAX_JOBS` jobs are refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime

from slurm_gpu.sim.alibaba import is_header, read_alibaba
from slurm_gpu.sim.trace_fields import (
    MAX_JOBS,
    MAX_LINE,
    CsvRows,
    Trace,
    TraceError,
    TraceJob,
    Where,
    capped_lines,
    check_count,
    finish,
    is_empty,
    read_count,
    read_csv_trace,
    read_time,
)
from slurm_gpu.units import UnitError, parse_time_minutes, parse_time_seconds

FORMATS = ("csv", "sacct", "swf", "alibaba")


# ---- the time-limit rule ----------------------------------------------------------------------

LIMIT_STEP_S = 900  # 15 minutes


def derive_time_limit(duration_s: int) -> int:
    """The time limit of a job whose trace gives none: the smallest power-of-two multiple of 15
    minutes (15m, 30m, 1h, 2h, 4h, ...) that covers the run time. Users ask for round limits and
    backfill plans on them; this keeps the overestimate under 2x (a job never runs into it)."""
    limit = LIMIT_STEP_S
    while limit < duration_s:
        limit *= 2
    return limit


# ---- fields -----------------------------------------------------------------------------------

def _limit(text: str, where: Where, column: str) -> int | None:
    try:
        minutes = parse_time_minutes(text)
    except UnitError as exc:
        raise where.error(column, str(exc)) from None
    return None if minutes is None else minutes * 60


# ---- Slurm-native CSV -------------------------------------------------------------------------

def read_csv(lines: Iterable[str], name: str = "<trace>") -> Trace:
    return read_csv_trace(lines, name, _read_csv)


def _read_csv(rows: CsvRows, name: str, header: list[str]) -> Trace:
    where = Where(name, header)
    missing = [c for c in ("job_id", "submit_time") if c not in header]
    if "duration" not in header and not {"start_time", "end_time"} <= set(header):
        missing.append("duration (or start_time and end_time)")
    if missing:
        raise TraceError(f"{name}:1:1: missing column(s) {', '.join(missing)}")
    fmt: list[str] = []
    jobs: list[TraceJob] = []
    skipped = 0
    where.line = 1
    for row in rows:
        where.line = rows.line_num
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) != len(header):
            raise TraceError(f"{name}:{where.line}:1: {len(row)} fields, the header has {len(header)}")
        f = dict(zip(header, row, strict=True))

        def get(col: str, f: dict[str, str] = f) -> str | None:
            v = f.get(col)
            return None if is_empty(v) else v

        start = read_time(v, where, "start_time", fmt) if (v := get("start_time")) else None
        end = read_time(v, where, "end_time", fmt) if (v := get("end_time")) else None
        if (v := get("duration")) is not None:
            duration = read_count(v, where, "duration")
        elif start is not None and end is not None:
            duration = max(0, end - start)
        else:
            duration = -1
        state = (get("state") or "").strip().upper() or None
        if start is None and (duration <= 0 or (state or "").startswith("CANCEL")):
            skipped += 1  # never ran in the trace
            continue
        if duration < 0:
            raise where.error("duration", "no run time (duration, or start_time and end_time)")
        frac_text = get("gpu_fraction")
        frac = None
        if frac_text is not None:
            try:
                frac = float(frac_text) if frac_text.isascii() else -1.0  # ASCII digits only
            except ValueError:
                frac = -1.0
            if not 0 < frac <= 1:
                raise where.error("gpu_fraction", f"bad fraction {frac_text[:20]!r}: expected 0 < f <= 1")
            frac = None if frac == 1 else frac
        gpus = read_count(v, where, "gpu_num") if (v := get("gpu_num")) else 0
        check_count(jobs, where)
        jobs.append(TraceJob(
            job_id=(get("job_id") or "").strip() or str(where.line), submit=read_time(
                get("submit_time") or "", where, "submit_time", fmt), duration=duration,
            gpus=1 if frac is not None else gpus,
            nodes=read_count(v, where, "node_num") or None if (v := get("node_num")) else None,
            cpus=read_count(v, where, "cpu_num") if (v := get("cpu_num")) else None,
            user=_s(get("user")), account=_s(get("account") or get("vc")), partition=_s(get("partition")),
            qos=_s(get("qos")), gpu_type=_s(get("gpu_type")), gpu_fraction=frac,
            time_limit_s=_limit(v, where, "time_limit") if (v := get("time_limit")) else None,
            state=state, start=start, line=where.line))
    return finish(jobs, fmt, skipped, name)


def _s(text: str | None) -> str | None:
    return text.strip() if text and text.strip() else None


# ---- sacct -P ---------------------------------------------------------------------------------

_TRES_GPU_RE = r"gres/gpu(?::([A-Za-z0-9_.-]+))?=([0-9]{1,9})"


def _tres_gpus(text: str) -> tuple[int, str | None]:
    """(GPUs, type) from a TRES list: the untyped total ``gres/gpu=N`` wins over per-type counts."""
    total, gtype, typed = None, None, 0
    for m in re.finditer(_TRES_GPU_RE, text):
        if m.group(1) is None:
            total = int(m.group(2))
        else:
            gtype = gtype or m.group(1)
            typed += int(m.group(2))
    return (total if total is not None else typed), gtype


def read_sacct(lines: Iterable[str], name: str = "<trace>") -> Trace:
    it = capped_lines(lines, name)
    try:
        header = [h.strip() for h in next(it).rstrip("\r\n").split("|")]
    except StopIteration:
        raise TraceError(f"{name}:1:1: empty trace") from None
    where = Where(name, header)
    col = {h.lower(): h for h in header}
    id_col = col.get("jobidraw") or col.get("jobid")
    if id_col is None or "submit" not in col:
        raise TraceError(f"{name}:1:1: missing column(s) JobID and Submit (sacct -P --format=JobID,Submit,...)")
    if not ({"elapsed", "elapsedraw"} & set(col) or {"start", "end"} <= set(col)):
        raise TraceError(f"{name}:1:1: missing column Elapsed (or Start and End)")
    fmt: list[str] = []
    jobs: list[TraceJob] = []
    skipped = 0
    for n, line in enumerate(it, 2):
        where.line = n
        text = line.rstrip("\r\n")
        if not text.strip():
            continue
        fields = text.split("|")
        if len(fields) != len(header):
            raise TraceError(f"{name}:{n}:1: {len(fields)} fields, the header has {len(header)}")
        f = dict(zip((h.lower() for h in header), fields, strict=True))

        def get(key: str, f: dict[str, str] = f) -> str | None:
            v = f.get(key)
            return None if is_empty(v) else v

        job_id = (f.get(id_col.lower()) or "").strip()
        if "." in job_id:
            continue  # a step (123.batch, 123.0)
        start = read_time(v, where, col["start"], fmt) if (v := get("start")) else None
        end = read_time(v, where, col["end"], fmt) if (v := get("end")) else None
        if (v := get("elapsedraw")) is not None:
            duration = read_count(v, where, col["elapsedraw"])
        elif (v := get("elapsed")) is not None:
            try:
                duration = parse_time_seconds(v)
            except UnitError as exc:
                raise where.error(col["elapsed"], str(exc)) from None
        else:
            duration = max(0, end - start) if start is not None and end is not None else 0
        if start is None:
            skipped += 1
            continue
        if (v := get("timelimitraw")) is not None:
            limit = read_count(v, where, col["timelimitraw"]) * 60 or None
        elif (v := get("timelimit")) is not None and v.strip() != "Partition_Limit":
            limit = _limit(v, where, col["timelimit"])
        else:
            limit = None
        gpus, gtype = _tres_gpus(get("alloctres") or get("reqtres") or "")
        check_count(jobs, where)
        jobs.append(TraceJob(
            job_id=job_id, submit=read_time(get("submit") or "", where, col["submit"], fmt), duration=duration,
            gpus=gpus, nodes=read_count(v, where, col["nnodes"]) or None if (v := get("nnodes")) else None,
            cpus=read_count(v, where, col["ncpus"]) if (v := get("ncpus")) else None,
            user=_s(get("user")), account=_s(get("account")), partition=_s(get("partition")), qos=_s(get("qos")),
            gpu_type=gtype, time_limit_s=limit, state=(get("state") or "").split(" ")[0].upper() or None,
            start=start, line=n))
    return finish(jobs, fmt, skipped, name)


# ---- SWF --------------------------------------------------------------------------------------

SWF_FIELDS = ("job", "submit", "wait", "run", "procs", "cpu_time", "mem", "req_procs", "req_time", "req_mem",
              "status", "user", "group", "exe", "queue", "partition", "preceding", "think")


def read_swf(lines: Iterable[str], name: str = "<trace>") -> Trace:
    jobs: list[TraceJob] = []
    skipped = 0
    where = Where(name, list(SWF_FIELDS))
    for n, line in enumerate(capped_lines(lines, name), 1):
        where.line = n
        text = line.strip()
        if not text or text.startswith(";"):
            continue
        parts = text.split()
        if len(parts) != len(SWF_FIELDS):
            raise TraceError(f"{name}:{n}:1: {len(parts)} fields, SWF has {len(SWF_FIELDS)}")
        v: dict[str, int] = {}
        for key, raw in zip(SWF_FIELDS, parts, strict=True):
            try:
                if not raw.isascii():  # float() reads other scripts' digits ("٣" is 3.0)
                    raise ValueError
                v[key] = int(float(raw))
            except (ValueError, OverflowError):
                raise where.error(key, f"bad number {raw[:20]!r}") from None
        if v["run"] < 0 or v["wait"] < 0:
            skipped += 1  # SWF: -1 = unknown (a job that never ran)
            continue
        procs = v["req_procs"] if v["req_procs"] > 0 else max(v["procs"], 0)
        check_count(jobs, where)
        jobs.append(TraceJob(
            job_id=str(v["job"]), submit=v["submit"], duration=v["run"], gpus=procs,
            user=str(v["user"]) if v["user"] >= 0 else None, account=str(v["group"]) if v["group"] >= 0 else None,
            time_limit_s=v["req_time"] if v["req_time"] > 0 else None,
            start=v["submit"] + v["wait"], line=n))
    return finish(jobs, ["epoch"], skipped, name)


READERS: dict[str, Callable[[Iterable[str], str], Trace]] = {
    "csv": read_csv, "sacct": read_sacct, "swf": read_swf, "alibaba": read_alibaba}


def detect_format(first_line: str) -> str:
    """The format from a trace's first line: ``|`` -> sacct, ``;`` or numbers only -> SWF, a header
    with ``num_gpu, gpu_milli, creation_time`` -> alibaba, else CSV."""
    t = first_line.strip()
    if is_header(t):
        return "alibaba"
    if "|" in t:
        return "sacct"
    if t.startswith(";") or re.match(r"^-?[0-9][0-9\s.-]*$", t):
        return "swf"
    return "csv"


def read_trace(lines: Iterable[str], name: str = "<trace>", fmt: str | None = None) -> Trace:
    """Read a trace of the given format (None: detected from the first line)."""
    it = iter(lines)
    first = next(it, "")
    chosen = fmt or detect_format(first)
    if chosen not in READERS:
        raise TraceError(f"{name}:1:1: unknown trace format {chosen!r}; known: {', '.join(FORMATS)}")

    def again() -> Iterator[str]:
        yield first
        yield from it

    return READERS[chosen](again(), name)


def format_time(t: int, time_format: str) -> str:
    """A simulated time written as the trace wrote its times (epoch seconds, or a UTC datetime)."""
    if time_format == "epoch":
        return str(t)
    try:
        return datetime.fromtimestamp(t, UTC).strftime(time_format)
    except (ValueError, OverflowError, OSError):  # beyond what a datetime holds (year 1..9999)
        return str(t)


__all__ = ["FORMATS", "MAX_JOBS", "MAX_LINE", "READERS", "SWF_FIELDS", "LIMIT_STEP_S", "Trace", "TraceError",
           "TraceJob", "derive_time_limit", "detect_format", "format_time", "read_csv", "read_sacct", "read_swf",
           "read_trace"]
