# SPDX-License-Identifier: Apache-2.0
"""slurmctld's own times of a lab replay's jobs, to the millisecond (docs/simulate.md "Times to the
millisecond"): the pure part. ``sacct`` keeps whole seconds; slurmctld's log (``LogTimeFormat`` iso8601_ms,
Slurm's default) stamps each submission, start and completion to the millisecond:

    [2026-12-03T18:19:54.770] _slurm_rpc_submit_batch_job: JobId=1 InitPrio=4294901759 usec=946
    [2026-12-03T18:19:54.962] sched: Allocate JobId=1 NodeList=h100n1 #CPUs=4 Partition=batch
    [2026-12-03T18:19:57.075] _job_complete: JobId=1 done
    [2026-12-03T18:23:04.697] sched/backfill: _start_job: Started JobId=21 in batch on h100n2

(22.05.8's lines in the lab; the patterns take the words after a ``: ``, not the prefix, which releases
rename.) :func:`events` reads them; :func:`aligned` puts them on the replay's clock and keeps a job's times
only where they agree with sacct's whole seconds, so a line that is not what it seems (another
version's wording, a user's text that slurmctld logged, another day) changes nothing: that job keeps
its whole seconds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from slurm_gpu.plain import NamedTuple

_STAMP = re.compile(r"\[([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?)\] (.*)\Z")
# (pattern, which time): the first submission and start of a job, its last completion (a requeued job
# has one start and one completion per run)
_PREFIX = r"\A(?:[a-z_/]+: ){0,3}"  # "sched: ", "sched/backfill: _start_job: ": a line's own, at its start
_EVENTS = ((re.compile(_PREFIX + r"_slurm_rpc_submit_batch_job: JobId=(?P<job>[0-9]+) "), "submit"),
           (re.compile(_PREFIX + r"(?P<pass>Allocate|Started) JobId=(?P<job>[0-9]+) "), "start"),
           (re.compile(_PREFIX + r"_job_complete: JobId=(?P<job>[0-9]+) done\Z"), "end"))
PASSES = {"Allocate": "main", "Started": "backfill"}  # the words each of slurmctld's passes logs a start with
TZ_STEP_S = 900  # time zones are whole quarter hours from UTC
SLACK_S = 1.5  # a logged time is at most this much after sacct's (truncated) second, and never before it


class Fine(NamedTuple):
    """A job's times in seconds (float): since the epoch as logged (:func:`events`), or from the
    replay's time 0 (:func:`aligned`). None where the log has none."""

    submit: float | None = None
    start: float | None = None
    end: float | None = None
    started_by: str = ""  # the pass that started the first run: "main" or "backfill"


def _epoch(stamp: str) -> float:
    """A log stamp read as UTC (the log has no zone; :func:`aligned` finds the offset)."""
    return datetime.fromisoformat(stamp).replace(tzinfo=UTC).timestamp()


def events(lines: Iterable[str], ids: Iterable[str]) -> dict[str, Fine]:
    """Per job id of ``ids``: its first submission, first start (and the pass that made it) and last
    completion in the log lines."""
    wanted = set(ids)
    got: dict[str, dict[str, float]] = {}
    by: dict[str, str] = {}
    for line in lines:
        m = _STAMP.match(line.rstrip("\n"))
        if m is None:
            continue
        message = m[2]
        for pattern, what in _EVENTS:
            e = pattern.search(message)
            if e is None or e["job"] not in wanted:
                continue
            try:
                when = _epoch(m[1])
            except ValueError:
                break
            jid = e["job"]
            times = got.setdefault(jid, {})
            if what == "end" or what not in times:
                times[what] = when
                if what == "start":
                    by[jid] = PASSES[e["pass"]]
            break
    return {jid: Fine(t.get("submit"), t.get("start"), t.get("end"), by.get(jid, "")) for jid, t in got.items()}


def _offset(logged: Mapping[str, Fine], whole: Mapping[str, tuple[int, int | None, int | None]],
            t0: int) -> int | None:
    """The log's zone offset: the quarter hour that most jobs' starts agree on with sacct's."""
    votes: dict[int, int] = {}
    for jid, fine in logged.items():
        start = whole.get(jid, (0, None, None))[1]
        if fine.start is not None and start is not None:
            step = round((t0 + start - fine.start) / TZ_STEP_S) * TZ_STEP_S
            votes[step] = votes.get(step, 0) + 1
    return max(votes, key=lambda k: (votes[k], -abs(k))) if votes else None


def aligned(logged: Mapping[str, Fine], whole: Mapping[str, tuple[int, int | None, int | None]],
            t0: int) -> dict[str, Fine]:
    """``logged`` (:func:`events`) as seconds from ``t0`` (epoch), for the jobs whose logged times all
    fall within :data:`SLACK_S` after their whole seconds in ``whole`` (job id -> submit, start, end
    from t0, sacct's): the rest are left out. Rounded to the millisecond."""
    offset = _offset(logged, whole, t0)
    if offset is None:
        return {}
    out = {}
    for jid, fine in logged.items():
        if jid not in whole:
            continue
        times = []
        for logged_s, second in zip(fine[:3], whole[jid], strict=True):
            rel = None if logged_s is None else round(logged_s + offset - t0, 3)
            if rel is not None and (second is None or not 0 <= rel - second < SLACK_S):
                break
            times.append(rel)
        else:
            out[jid] = Fine(times[0], times[1], times[2], fine.started_by)
    return out
