# SPDX-License-Identifier: Apache-2.0
"""The mean time to interruption of a partition, estimated from accounting (pure: the caller hands in
the text of ``sacct -a -X -D -P -n -r PARTITION -S SINCE -E now -o JobIDRaw,State,Elapsed``).

Every run of every job counts (``-D``: a requeued job's earlier runs are records of their own, in state
REQUEUED). The exposure is the sum of the runs' elapsed times; an interruption is a run that ended
PREEMPTED, NODE_FAIL, BOOT_FAIL or REQUEUED. MTTI = exposure / interruptions: the expected running time
of one job between two interruptions. REQUEUED also counts requeues that were no interruption (a
user's ``scontrol requeue``, a job requeueing itself at its time limit), so the estimate errs short,
as SCR's does (it counts every restart).
"""

from __future__ import annotations

from slurm_gpu.plain import Record, record
from slurm_gpu.units import UnitError, parse_time_seconds

SACCT_FIELDS = "JobIDRaw,State,Elapsed"
INTERRUPTIONS = ("PREEMPTED", "NODE_FAIL", "BOOT_FAIL", "REQUEUED")
MAX_LINES = 2_000_000


@record
class MttiEstimate(Record):
    """Runs seen, their total elapsed seconds, interruptions, and the MTTI (None without interruption)."""

    runs: int
    exposure_s: float
    interruptions: int
    by_state: tuple[tuple[str, int], ...] = ()
    skipped: int = 0  # lines that are no run record (not three fields, an elapsed time that does not parse)

    @property
    def mtti_s(self) -> float | None:
        return self.exposure_s / self.interruptions if self.interruptions else None


def estimate(sacct_text: str) -> MttiEstimate:
    runs, skipped, exposure = 0, 0, 0.0
    counts: dict[str, int] = {}
    for n, line in enumerate(sacct_text.splitlines()):
        if n >= MAX_LINES:
            skipped += 1
            break
        fields = line.split("|")
        if not line.strip():
            continue
        if len(fields) != 3:
            skipped += 1
            continue
        state = (fields[1].split() or [""])[0].upper()  # "CANCELLED by 0" -> CANCELLED
        try:
            elapsed = parse_time_seconds(fields[2]) if ":" in fields[2] else None
        except UnitError:
            elapsed = None
        if elapsed is None:
            skipped += 1
            continue
        runs += 1
        exposure += elapsed
        if state in INTERRUPTIONS:
            counts[state] = counts.get(state, 0) + 1
    return MttiEstimate(runs=runs, exposure_s=exposure, interruptions=sum(counts.values()),
                        by_state=tuple(sorted(counts.items())), skipped=skipped)
