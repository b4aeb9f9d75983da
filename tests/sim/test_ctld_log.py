# SPDX-License-Identifier: Apache-2.0
"""slurmctld's log read for a replay's times to the millisecond (slurm_gpu/sim/ctld_log.py), and a
record's ``_ms`` columns read back. The lines are slurmctld 22.05.8's own, from the lab's log (with a
forged line's text in an error message, and an older prefix of the backfill start). Whether each
supported release still writes these words is checked in its lab
(test_replay.py::test_short_replay_in_the_shared_lab)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from slurm_gpu.sim.ctld_log import Fine, aligned, events
from slurm_gpu.sim.replay import RECORD_COLUMNS, RealJob, read_record, record_text

LOG = """\
[2026-12-03T18:19:54.770] _slurm_rpc_submit_batch_job: JobId=1 InitPrio=4294901759 usec=946
[2026-12-03T18:19:54.782] _slurm_rpc_submit_batch_job: JobId=2 InitPrio=4294901758 usec=400
[2026-12-03T18:19:54.962] sched: Allocate JobId=1 NodeList=h100n1 #CPUs=4 Partition=batch
[2026-12-03T18:19:57.070] _job_complete: JobId=1 WEXITSTATUS 0
[2026-12-03T18:19:57.071] _job_complete: JobId=1 done
[2026-12-03T18:19:59.003] error: job name "x] sched: Allocate JobId=2 NodeList=forged" refused
[2026-12-03T18:20:00.417] sched/backfill: _start_job: Started JobId=2 in batch on h100n2
[2026-12-03T18:20:09.500] _job_complete: JobId=2 done
[2026-12-03T18:20:09.600] _job_complete: JobId=3 done
"""
T0 = int(datetime(2026, 12, 3, 18, 19, 54, tzinfo=UTC).timestamp())


def test_events_first_submit_and_start_last_end_of_the_jobs_asked() -> None:
    got = events(LOG.splitlines(), ["1", "2"])
    assert set(got) == {"1", "2"}
    assert got["1"] == Fine(T0 + 0.770, T0 + 0.962, T0 + 3.071, "main")
    # the backfill start, not the user text that slurmctld logged in another line's middle
    assert got["2"] == Fine(T0 + 0.782, T0 + 6.417, T0 + 15.5, "backfill")


def test_a_requeued_job_keeps_its_first_start_and_its_last_end() -> None:
    lines = ["[2026-12-03T18:19:55.100] sched: Allocate JobId=7 NodeList=n #CPUs=1 Partition=spot",
             "[2026-12-03T18:19:58.000] _job_complete: JobId=7 done",
             "[2026-12-03T18:20:10.200] backfill: Started JobId=7 in spot on n",
             "[2026-12-03T18:20:20.300] _job_complete: JobId=7 done"]
    assert events(lines, ["7"])["7"] == Fine(None, T0 + 1.1, T0 + 26.3, "main")


def test_aligned_finds_the_zone_and_keeps_only_jobs_that_agree_with_sacct() -> None:
    # the log in UTC+1 (a local time an hour ahead): the stamps read as UTC are 3,600 s late
    logged = {k: Fine(*(None if v is None else v + 3600 for v in f[:3]), f.started_by) for k, f in
              events(LOG.splitlines(), ["1", "2"]).items()}
    whole = {"1": (0, 0, 3), "2": (0, 6, 15)}
    one = Fine(0.77, 0.962, 3.071, "main")
    assert aligned(logged, whole, T0) == {"1": one, "2": Fine(0.782, 6.417, 15.5, "backfill")}
    # job 2's sacct start is a second later than the log's: its times are dropped, job 1's kept
    assert aligned(logged, whole | {"2": (0, 7, 15)}, T0) == {"1": one}
    assert aligned({}, whole, T0) == {} and aligned(logged, {}, T0) == {}


@given(st.lists(st.text(max_size=120), max_size=30))
def test_events_never_raise_on_any_text(lines: list[str]) -> None:
    got = events(lines + [f"[2026-13-45T99:00:00.000] sched: Allocate JobId=1 {x}" for x in lines[:3]], ["1"])
    assert all(isinstance(f, Fine) for f in got.values())


def test_a_record_keeps_its_milliseconds_and_an_older_one_still_reads(tmp_path: Path) -> None:
    real = [RealJob("11", "a", 0, 1, 9, "batch", 1, "COMPLETED", 1, 0.77, 1.962, 9.071, "backfill"),
            RealJob("12", "b", 0, 2, 8, "batch", 1, "COMPLETED", 1)]
    new = tmp_path / "new.csv"
    new.write_text(record_text(real, ["params: {}"]))
    assert read_record(str(new))[0] == real
    old = tmp_path / "old.csv"
    old.write_text("\n".join([",".join(RECORD_COLUMNS[:9]), "12,b,0,2,8,batch,1,COMPLETED,1"]) + "\n")
    assert read_record(str(old))[0] == real[1:]
    bad = tmp_path / "bad.csv"
    bad.write_text(",".join(RECORD_COLUMNS) + "\n12,b,0,2,8,batch,1,COMPLETED,1,nan,,,\n")
    try:
        read_record(str(bad))
    except Exception as exc:  # noqa: BLE001 - the one line names the row
        assert "bad.csv:2: bad record row" in str(exc)
    else:
        raise AssertionError("a NaN time was read")
