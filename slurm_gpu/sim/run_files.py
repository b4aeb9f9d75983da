# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu simulate``'s I/O: read the trace (bounded) and the policies, run the pure simulator,
write DIR/<policy>/jobs.csv, rejected.csv, summary.json, DIR/differences.txt and DIR/report.html
(docs/simulate.md).

With one policy the files go straight into DIR. Each file is written to a new temporary file in its
directory (``O_CREAT|O_EXCL|O_NOFOLLOW``) and renamed over the name (slurm_gpu/adapters/fs.py
write_atomic): whatever was there (a symlink, a FIFO) is replaced, never followed or opened, so nothing
blocks and nothing outside DIR is written.
Errors: a bad trace or policy raises a SlurmGpuError (exit 1); an unreadable or missing file, or an
output that cannot be written, a UsageError (exit 2).
"""

from __future__ import annotations

import errno
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from slurm_gpu.adapters import fs
from slurm_gpu.errors import UsageError
from slurm_gpu.sim.params import Params
from slurm_gpu.sim.traces import MAX_LINE, Trace, read_trace

MAX_TRACE_BYTES = 4 << 30  # 4 GiB: more than the largest public trace


def load_trace(path: str, fmt: str | None = None) -> Trace:
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"trace {path!r} is not a readable file")
    if p.stat().st_size > MAX_TRACE_BYTES:
        raise UsageError(f"trace {path!r} is larger than {MAX_TRACE_BYTES >> 30} GiB")
    try:
        with open(p, encoding="utf-8", errors="strict", newline="") as fh:
            lines = iter(lambda: fh.readline(MAX_LINE + 2), "")
            return read_trace(lines, path, fmt)
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"trace {path!r}: {exc.strerror}") from None


def run(policies: list[str], trace_path: str, out_dir: str, params: Params, fmt: str | None = None,
        progress: bool = False) -> str:
    """Simulate the trace under each policy; returns the text to print (the differences table).
    ``progress``: a line on stderr every few seconds of a long run."""
    from slurm_gpu.policy.load import load_policy
    from slurm_gpu.sim.engine import simulate
    from slurm_gpu.sim.report import differences, jobs_csv, rejected_csv, summary
    from slurm_gpu.sim.report_html import render

    for p in policies:
        if not os.path.isfile(p):
            raise UsageError(f"policy file {p!r} does not exist")
    trace = load_trace(trace_path, fmt)
    loaded = [load_policy(p) for p in policies]
    names: list[str] = []
    for pol in loaded:
        name = pol.name
        while name in names:
            name += "'"
        names.append(name)
    out = Path(out_dir)
    summaries = []
    for name, pol in zip(names, loaded, strict=True):
        result = simulate(trace, pol, params, progress=progress_line(name) if progress else None)
        s = summary(result, name)
        s["params"] = dict(params._asdict())
        where = out if len(loaded) == 1 else out / name
        write_files(where, {"jobs.csv": jobs_csv(result, trace.time_format), "rejected.csv": rejected_csv(result),
                            "summary.json": json.dumps(s, indent=1) + "\n"}, sub=len(loaded) > 1)
        summaries.append(s)
    table = differences(summaries)
    files = {"report.html": render(summaries, os.path.basename(trace_path))}
    if len(loaded) > 1:
        files["differences.txt"] = table
    write_files(out, files)
    return table


def progress_line(name: str, every_s: float = 5.0) -> Callable[[int, int, int, int], None]:
    """The engine's progress callback: at most one line per ``every_s`` seconds of wall time, on stderr."""
    last = time.monotonic()

    def report(simulated_s: int, started: int, jobs: int, pending: int) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= every_s:
            last = now
            print(f"slurm-gpu simulate: {name}: {started:,} of {jobs:,} jobs started, {pending:,} pending, "
                  f"{simulated_s / 86400:,.1f} simulated days", file=sys.stderr, flush=True)
    return report


def write_files(where: Path, files: dict[str, str], sub: bool = False) -> None:
    """Write the files into ``where`` (made when missing; run by root, no directory that a non-root user
    owns or can write: slurm_gpu/adapters/fs.py). A per-policy ``sub`` directory of DIR must not be a symlink."""
    try:
        dfd = fs.open_dir(os.path.abspath(where), create=True, trust=fs.CALLER, follow_last=not sub)
    except OSError as exc:
        why = "a symbolic link" if sub and exc.errno == errno.ELOOP else exc.strerror or exc
        raise UsageError(f"cannot write {where}: {why}") from None
    try:
        for name, text in files.items():
            fs.write_atomic(dfd, name, text.encode("utf-8"), mode=0o644, what=str(where))
    except OSError as exc:
        raise UsageError(f"cannot write {where}: {exc.strerror or exc}") from None
    finally:
        os.close(dfd)


def write_text(path: str | Path, text: str) -> str:
    """One output file (its directory made when missing) by the same rule as :func:`run`'s; UsageError
    with one line when it cannot be written."""
    p = Path(path)
    write_files(p.parent, {p.name: text})
    return str(p)
