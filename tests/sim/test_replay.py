# SPDX-License-Identifier: Apache-2.0
"""The validation against real Slurm (docs/simulate.md "Validation against real Slurm").

Without the lab: the simulator, as it is now, against the recorded real runs of the 200-job lab trace
(tests/sim/data/lab-replay-22.05.8*.csv), with the issue's thresholds where the run was complete. In
the lab (``slurm``): a short replay through ``slurm-gpu simulate --replay-in-lab``'s code path in the shared lab.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurm_gpu.cli.main import cli
from slurm_gpu.errors import UsageError
from slurm_gpu.sim.params import Params
from slurm_gpu.sim.replay import RealJob, compare_with, read_record, replay_in_lab, routed

from .helpers import DATA, run, schedule

UNIVERSITY = str(DATA.parents[2] / "examples" / "policies" / "university.yaml")
TRACE = str(DATA / "lab-trace-200.csv")
RECORD = str(DATA / "lab-replay-22.05.8.csv")
FACTOR = 15

TAU_GOAL = 0.9  # issue 14: Kendall tau >= 0.9
ERROR_GOAL = 0.15  # issue 26: median start error <= 15 % of the mean wait (issue 14 asked 10 %: see docs/simulate.md)


def lab_record(path: str) -> tuple[list[RealJob], Params]:
    """A record and its lab's parameters (records written before the backfill reservation fields, runs
    1 and 2, get Slurm's semantics and their time 0 from ``read_record``: see test_older_records_...)."""
    real, params = read_record(path)
    assert params is not None
    return real, params


def test_older_records_get_slurms_reservation_semantics_and_their_time_0():
    _real, params = read_record(RECORD)
    text = Path(RECORD).read_text()
    assert '"bf_whole_nodes"' not in text and '"clock0_s"' not in text
    when = re.search(r"from (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)", text)
    assert when is not None
    assert params is not None and params.bf_whole_nodes and params.bf_resolution_s == 60
    assert params.clock0_s == int(datetime.strptime(when[1], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp())


RUN3 = str(DATA / "lab-replay-22.05.8-run3.csv")  # a third full run (2026-12-01): see docs/simulate.md


@pytest.mark.parametrize("record", [RECORD, RUN3], ids=["run1", "run3"])
def test_the_simulator_reproduces_the_recorded_lab_run(record: str) -> None:
    real, params = lab_record(record)
    assert params is not None and len(real) == 200
    cmp, rows = compare_with(routed(UNIVERSITY, TRACE, FACTOR), real, UNIVERSITY, params)
    assert cmp.jobs == 200 and not cmp.missing
    assert cmp.tau_b is not None and cmp.tau_b >= TAU_GOAL, cmp
    assert cmp.error_of_wait is not None and cmp.error_of_wait <= ERROR_GOAL, cmp


RUN2 = str(DATA / "lab-replay-22.05.8-run2-partial.csv")


def test_the_simulator_is_as_close_to_a_second_real_run_as_the_first_real_run_is() -> None:
    # Run 2 of the same trace stopped after 163 submissions (munge failed under other work); on the jobs
    # both real runs started before t=460 (before run 2's submissions stopped mattering), real Slurm
    # against itself gives tau-b 0.93 and a median error of 0.26 of the mean wait: the floor. The
    # simulator, with run 2's own measured parameters, must stay within 0.05 of that tau and within twice
    # that error (issue 26's rule).
    from slurm_gpu.sim.validate import compare

    run1 = {r.trace_job_id: r for r in read_record(RECORD)[0]}
    real2, params = lab_record(RUN2)
    assert len(real2) == 163
    run2 = {r.trace_job_id: r for r in real2}
    common = sorted(k for k in run2 if (run1[k].start or 0) < 460 and (run2[k].start or 0) < 460)
    truth = {k: (run2[k].submit, run2[k].start or 0) for k in common}
    floor = compare(truth, {k: run1[k].start for k in common})
    _cmp, rows = compare_with(routed(UNIVERSITY, TRACE, FACTOR), real2, UNIVERSITY, params)
    sim = {k: s for k, _sub, _real, s, _part in rows}
    got = compare(truth, {k: sim[k] for k in common})
    assert floor.tau_b is not None and got.tau_b is not None and got.error_of_wait is not None
    assert got.jobs == floor.jobs > 100
    assert got.tau_b >= floor.tau_b - 0.05, (got, floor)
    # issue 26: no worse than twice the real-against-real error (issue 14's test asked for no worse at all;
    # the model in tenths of a second gives 11 s against real's 10 s here, 0.287 against 0.261)
    assert floor.error_of_wait is not None and got.error_of_wait <= 2 * floor.error_of_wait, (got, floor)


def test_replay_from_cli_prints_both_figures(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["simulate", "--policy", UNIVERSITY, "--trace", TRACE, "--out", str(tmp_path),
                                   "--replay-from", RECORD])
    assert res.exit_code == 0, res.output
    assert "Kendall tau-b" in res.output and "error / mean wait" in res.output
    rows = (tmp_path / "replay-compare.csv").read_text().splitlines()
    assert rows[0] == "trace_job_id,submit,real_start,sim_start,partition" and len(rows) == 201


def test_replay_usage_and_bad_record(tmp_path: Path) -> None:
    two = CliRunner().invoke(cli, ["simulate", "--policy", UNIVERSITY, "--policy", UNIVERSITY, "--trace", TRACE,
                                   "--out", str(tmp_path), "--replay-from", RECORD])
    assert two.exit_code == 2
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,start\n1,2\n")
    res = CliRunner().invoke(cli, ["simulate", "--policy", UNIVERSITY, "--trace", TRACE, "--out", str(tmp_path),
                                   "--replay-from", str(bad)])
    assert res.exit_code == 1 and "expected the columns" in res.output and "Traceback" not in res.output


def test_a_replay_in_the_lab_refuses_an_output_directory_it_cannot_write_before_it_submits(tmp_path: Path) -> None:
    # the directory is a file: the replay fails at once, before anything is sent to Slurm (no lab here:
    # an sbatch would fail with another message)
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(UsageError, match="cannot write"):
        replay_in_lab(UNIVERSITY, TRACE, str(blocked / "out"), 15, say=lambda m: None,
                      env={"SLURM_CONF": str(tmp_path / "no-slurm.conf"), "PATH": "/nonexistent"})


@pytest.mark.slurm
def test_short_replay_in_the_shared_lab(slurm_lab, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # 20 jobs, 30x compressed (about a minute). The shared lab runs other people's jobs too, so start
    # times are not checked against the simulation here (the 200-job run in a private lab is, above);
    # what is checked is what the replay itself must get right whatever else runs.
    lines = Path(TRACE).read_text().splitlines()[:21]
    trace = tmp_path / "t20.csv"
    trace.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    text = replay_in_lab(slurm_lab.policy_path, str(trace), str(out), 30, user=slurm_lab.user, timeout_s=600,
                         say=lambda m: None, env=slurm_lab.env())
    assert "Kendall tau-b" in text
    real, params = read_record(str(out / "lab-replay.csv"))
    assert params is not None and params.bf_interval_s == 5
    jobs = {r.job.job_id: r for r in routed(slurm_lab.policy_path, str(trace), 30)}
    assert sorted(r.trace_job_id for r in real) == sorted(jobs)
    for r in real:
        job = jobs[r.trace_job_id]
        assert r.partition == job.route.partition and r.nodes == job.route.nodes
        assert r.start is not None and r.end is not None and r.start >= r.submit >= job.job.submit
        if r.runs == 1:  # a sleep of the compressed run time (seconds resolution)
            assert r.state == "COMPLETED" and abs((r.end - r.start) - job.job.duration) <= 2, r
    # slurmctld's log gave every job its times to the millisecond (this Slurm's wording of the submit,
    # start and completion lines is the one sim/ctld_log.py reads), each within a second and a half after
    # sacct's. A release whose backfill logs no start (release.py) leaves the start of each job it started
    # to sacct; the main scheduler's starts are logged on every release.
    from slurm_gpu.slurm.release import spelling_for

    every_start = spelling_for(slurm_lab.version).logs_backfill_starts
    for r in real:
        assert r.submit_ms is not None and r.end_ms is not None, r
        assert 0 <= r.submit_ms - r.submit < 1.5 and 0 <= r.end_ms - r.end < 1.5, r
        if r.start_ms is None:
            assert not every_start and r.started_by == "", r
            continue
        assert 0 <= r.start_ms - r.start < 1.5 and r.started_by in ("main", "backfill"), r
        if r.runs == 1:
            sleep = jobs[r.trace_job_id].job.duration
            assert sleep <= r.end_ms - r.start_ms < sleep + 3, r
    timed = sum(r.start_ms is not None for r in real)
    assert timed == 20 if every_start else timed >= 1
    assert f"times to the millisecond (slurmctld's log): {timed} of 20 jobs" in text


# Slurm 22.05's backfill reserves a pending job's nodes whole, on the bf_resolution grid (backfill.c:
# the reservation is the job's node bitmap from start to start + limit, both rounded down to
# bf_resolution; seen in the lab as squeue's StartTime/SchedNodes: 1-GPU jobs each planned on a whole
# node for 3-minute slots on whole minutes). The tiny policy: 2 nodes x 4 GPUs. a holds n1 (limit 20m);
# b holds 3 GPUs of n2 until its limit, 600; c (2 GPUs) is reserved on n2 from 600; d (1 GPU) would fit
# n2's free GPU now.
RESV = """job_id,user,gpu_num,node_num,submit_time,duration,time_limit
a,u,4,1,0,1000,20
b,u,3,1,0,1000,10
c,u,2,1,10,50,10
d,u,1,1,{d_submit},50,{d_limit}
"""


@pytest.mark.parametrize(("whole", "grid", "clock0", "d_submit", "d_limit", "d_start"), [
    # GPUs reserved: at 600 n2 has b's 3 back, c takes 2 and d 1 (until 920): d does not delay c
    (False, 0, 0, 20, 15, 20),
    # whole node: d's limit (20-920) overlaps c's reservation of n2 (600-1200): d waits for b's end
    (True, 0, 0, 20, 15, 600),
    # d's limit 50-590 ends before the reservation starts (600, on the 60 s grid): d backfills
    (True, 60, 0, 50, 9, 50),
    # the wall clock at time 0 is 30 s past a minute: the reservation starts at 570 < 590
    (True, 60, 30, 50, 9, 600),
])
def test_backfill_reservations_take_whole_nodes_on_the_resolution_grid(
        whole: bool, grid: int, clock0: int, d_submit: int, d_limit: int, d_start: int) -> None:
    got = schedule(run(RESV.format(d_submit=d_submit, d_limit=d_limit), bf_whole_nodes=whole,
                       bf_resolution_s=grid, clock0_s=clock0))
    assert got["c"] == (600, 650) and got["d"] == (d_start, d_start + 50)


def test_the_lab_conf_maps_to_slurms_reservations() -> None:
    from slurm_gpu.sim.validate import params_from_conf

    p = params_from_conf("SchedulerType=sched/backfill\nSchedulerParameters=sched_interval=5,bf_interval=5\n")
    assert p.bf_whole_nodes and p.bf_resolution_s == 60 and p.bf_interval_s == 5
    assert params_from_conf("SchedulerParameters=bf_resolution=30\n").bf_resolution_s == 30
