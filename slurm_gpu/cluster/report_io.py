# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu report`` and ``slurm-gpu exporter`` I/O: sacct and scontrol through the one runner, the
hooks' JSON-lines file, the textfile and the HTML report written by slurm_gpu/adapters/fs.py (temp file +
rename, root refuses a directory a user can write); the numbers are computed by the pure
:mod:`slurm_gpu.cluster.report`, :mod:`~slurm_gpu.cluster.autoscale` and :mod:`~slurm_gpu.cluster.exporter`."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from slurm_gpu.adapters import fs
from slurm_gpu.cluster.jobstats_io import load_optional_policy, sacct_lines
from slurm_gpu.digits import is_digits
from slurm_gpu.errors import UsageError
from slurm_gpu.jsontypes import JsonValue, nested_deeper_than

if TYPE_CHECKING:
    from slurm_gpu.cluster.autoscale import AutoscaleDoc
    from slurm_gpu.cluster.report import ReportDoc
    from slurm_gpu.policy.model import Policy

REPORT_FIELDS = ("JobID", "JobIDRaw", "User", "Account", "Partition", "QOS", "State", "Submit", "Start", "End",
                 "ElapsedRaw", "AllocTRES", "AdminComment")
STATS_FILE = "/var/log/slurm-gpu/gpu-jobs.jsonl"  # the hooks' per-GPU records (docs/hooks.md)
MAX_STATS_BYTES = 16 << 20  # the tail of the stats file that the exporter reads
PROM_NAME = "slurm_gpu.prom"


def sacct_window(text: str, now: float, what: str) -> str:
    """``7d``/``12h``/``90m`` (before now), ``now``, or a date/time sacct reads (``2026-11-01``,
    ``2026-11-01T08:00``) -> the text given to sacct -S/-E."""
    from slurm_gpu.units import UnitError, parse_time_seconds

    t = text.strip()
    if t.lower() == "now":
        return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    if is_digits(t[:1]) and len(t) >= 10 and t[4:5] == "-":
        try:
            datetime.fromisoformat(t)
        except ValueError:
            raise UsageError(f"{what} {text[:40]!r}: not a date; give 7d, 12h, now or 2026-11-01[T08:00]") from None
        return t
    try:
        secs = parse_time_seconds(t)
    except UnitError:
        raise UsageError(f"{what} {text[:40]!r}: give a duration before now (7d, 12h, 90m), now, or a date "
                         "(2026-11-01, 2026-11-01T08:00)") from None
    return datetime.fromtimestamp(now - secs, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def gather_docs(since: str, until: str, bys: tuple[str | None, ...], policy_opt: str | None = None,
                env: Mapping[str, str] | None = None, now: float | None = None,
                jobs: str | None = None) -> tuple[list[ReportDoc], str, str, Policy | None]:
    """(a report document per grouping in ``bys``, sacct's -S and -E, the policy) of the window (only
    ``jobs``, comma-separated ids, if given). The rows are streamed from sacct into the aggregation: the
    window is never held (docs/report.md "Large windows")."""
    from slurm_gpu.cluster.report import reports
    from slurm_gpu.slurm.sacct import iter_sacct

    now = time.time() if now is None else now
    start, end = sacct_window(since, now, "--since"), sacct_window(until, now, "--until")
    policy = load_optional_policy(policy_opt, env)
    only: list[str] = []
    if jobs is not None:
        from slurm_gpu.cluster.jobstats_io import normalise_job_id

        only = ["-j", ",".join(normalise_job_id(j.strip()) for j in jobs.split(",")[:1000])]
    with sacct_lines(["sacct", "-a", "-X", "-D", "-P", "-S", start, "-E", end, *only,
                      f"--format={','.join(REPORT_FIELDS)}"], env) as lines:
        docs = reports(iter_sacct(lines), policy, bys, start, end)
    return docs, start, end, policy


def gather_report(since: str, until: str, by: str | None, policy_opt: str | None = None,
                  env: Mapping[str, str] | None = None, now: float | None = None,
                  jobs: str | None = None) -> tuple[ReportDoc, Policy | None]:
    """(the report document, the policy) for the window."""
    docs, _start, _end, policy = gather_docs(since, until, (by,), policy_opt, env, now, jobs)
    return docs[0], policy


def write_html(path: str, doc: ReportDoc, by_account: ReportDoc) -> None:
    """The HTML report (one self-contained file) of a report document and its by-account one, written to a
    temporary file beside ``path`` and renamed."""
    from slurm_gpu.cluster.report_html import render

    write_textfile(os.path.dirname(os.path.abspath(path)), render(doc, by_account), os.path.basename(path))


def gather_autoscale(report_doc: ReportDoc, policy: Policy | None, env: Mapping[str, str] | None = None,
                     now: float | None = None) -> AutoscaleDoc:
    from slurm_gpu.adapters.slurm import SbatchCli
    from slurm_gpu.cluster.autoscale import autoscale

    jobs = SbatchCli(env=env).job_records()
    for problem in jobs.problems:
        sys.stderr.write(f"slurm-gpu report: {problem}\n")
    return autoscale([j.fields for j in jobs.jobs], report_doc, time.time() if now is None else now, policy)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def read_stats_records(path: str, max_bytes: int = MAX_STATS_BYTES,
                       log: Callable[[str], None] = _stderr) -> list[dict[str, JsonValue]]:
    """The last ``max_bytes`` of the hooks' JSON-lines file; lines that are no JSON object are skipped,
    and those that json cannot even hold (nesting past the recursion limit, memory) as well, with one
    line to ``log`` for them all. A FIFO or device is refused (UsageError), never read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{path}: not a regular file")
        offset = max(0, st.st_size - max_bytes)
        os.lseek(fd, offset, os.SEEK_SET)
        chunks, size = [], 0
        while size < max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    lines = b"".join(chunks).decode("utf-8", errors="replace").split("\n")  # JSON lines: \n ends a record
    if offset:
        lines = lines[1:]  # the first line was cut
    out = []
    unreadable, first = 0, 0
    for n, line in enumerate(lines, 1):
        if nested_deeper_than(line):
            unreadable, first = unreadable + 1, first or n
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        except (RecursionError, MemoryError):
            unreadable, first = unreadable + 1, first or n
            continue
        if isinstance(rec, dict):
            out.append(rec)
    if unreadable:
        log(f"{path}: {unreadable} record(s) skipped, nested too deeply or too large to read "
            f"(the first on line {first}{' of the tail read' if offset else ''})")
    return out


def check_output_dir(path: str) -> None:
    """UsageError, before any work is done, when ``path``'s directory is one :func:`write_textfile` would
    refuse (missing, a symlink, or, run by root, a directory that a non-root user owns or can write)."""
    parent = os.path.dirname(os.path.abspath(path))
    try:
        fd = fs.open_dir(parent, trust=fs.CALLER)
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None
    try:
        fs.check_dir_fd(fd, parent)
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def write_textfile(directory: str, text: str, name: str = PROM_NAME) -> str:
    """Write ``DIR/name`` as node_exporter's textfile collector wants, mode 0644, through
    slurm_gpu/adapters/fs.py: a temporary file created in DIR with ``O_EXCL|O_NOFOLLOW`` (a random
    name), fsync, ``fchmod``, renamed over the name (a symlink planted there is replaced, never
    followed). Run by root, a DIR (or a directory above it) that a non-root user owns or can write is
    refused: UsageError, one line, nothing written."""
    try:
        return fs.write_atomic(directory, name, text.encode("utf-8"), mode=0o644, sync=True)
    except FileNotFoundError:
        raise UsageError(f"{directory}: not a directory") from None
    except OSError as exc:
        raise UsageError(f"{os.path.join(directory, name)}: {exc.strerror or exc}") from None


def exporter_text(records_dir: str | None, stats_file: str | None, env: Mapping[str, str] | None = None) -> str:
    """The cluster view (live, or recorded in ``records_dir``) and the job records as textfile text."""
    from slurm_gpu.cluster.exporter import exposition
    from slurm_gpu.cluster.view import from_texts
    from slurm_gpu.ports import ClusterSource

    source: ClusterSource
    if records_dir is not None:
        from slurm_gpu.adapters.slurm.recorded import RecordedCluster

        source = RecordedCluster(records_dir)
    else:
        from slurm_gpu.adapters.slurm import SbatchCli

        source = SbatchCli(env=env)
    view = from_texts(source.nodes_text(), source.jobs_json(), source.partitions_text(), None)
    for problem in view.problems:
        sys.stderr.write(f"slurm-gpu exporter: {problem}\n")
    records = read_stats_records(stats_file) if stats_file else []
    return exposition(view.summary, records, skipped=len(view.problems))


__all__ = ["gather_docs", "write_html", "gather_report", "gather_autoscale", "sacct_window", "read_stats_records",
           "write_textfile", "exporter_text", "REPORT_FIELDS", "STATS_FILE"]
