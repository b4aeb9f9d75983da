# SPDX-License-Identifier: Apache-2.0
"""Issue 26: the lab validation traces of other shapes (validate.shaped_trace), the one table of the lab's
scheduler parameters (slurm/scheduler_params.py) and the per-class figures of a replay."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurm_gpu.cli.main import cli
from slurm_gpu.sim.replay import routed
from slurm_gpu.sim.traces import read_trace
from slurm_gpu.sim.validate import (
    SHAPES,
    compare,
    compare_classes,
    params_from_conf,
    shaped_trace,
    with_lab_scheduler,
)
from slurm_gpu.slurm.scheduler_params import LAB_SCHEDULER_PARAMETERS, lab_scheduler_line

from .helpers import DATA

UNIVERSITY = str(DATA.parents[2] / "examples" / "policies" / "university.yaml")


@pytest.mark.parametrize("shape", SHAPES)
def test_each_shaped_fixture_is_the_documented_generator(shape: str) -> None:
    assert (DATA / f"lab-trace-{shape}.csv").read_text() == shaped_trace(shape)


def _routes(shape: str) -> Counter[tuple[str, str | None, int]]:
    return Counter((r.route.partition, r.route.qos, r.route.nodes * r.route.gpus_per_node)
                   for r in routed(UNIVERSITY, str(DATA / f"lab-trace-{shape}.csv"), 15))


def test_the_shapes_are_what_their_names_say() -> None:
    debug = _routes("debug-cap")
    assert sum(n for (p, q, _g), n in debug.items() if (p, q) == ("interactive", "debug")) == 40
    gang = _routes("gang")
    assert gang[("batch", "high", 16)] == 12 and sum(gang.values()) == 36
    spot = _routes("spot")
    assert sum(n for (p, _q, _g), n in spot.items() if p == "spot") >= 0.4 * sum(spot.values())
    assert sum(n for (_p, q, _g), n in spot.items() if q == "high") >= 10
    rows = read_trace((DATA / "lab-trace-array.csv").read_text().splitlines(), "a.csv").jobs
    same_second = Counter(j.submit for j in rows)
    assert sum(1 for n in same_second.values() if n >= 6) == 8  # the 8 arrays, each in one second


def test_an_unknown_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown shape"):
        shaped_trace("wide")


def test_the_one_table_is_the_lab_line_and_what_the_simulator_reads() -> None:
    line = lab_scheduler_line()
    assert line == "SchedulerParameters=" + ",".join(f"{k}={v}" for k, v, _ in LAB_SCHEDULER_PARAMETERS)
    conf = "SchedulerType=sched/backfill\nSchedulerParameters=sched_interval=5,bf_interval=5\nPreemptType=x\n"
    new = with_lab_scheduler(conf)
    assert new is not None and new.splitlines() == ["SchedulerType=sched/backfill", line, "PreemptType=x"]
    assert with_lab_scheduler(new) is None  # written once: a lab that has it is not reconfigured
    appended = with_lab_scheduler("SchedulerType=sched/backfill\n")
    assert appended is not None and appended.splitlines()[-1] == line
    table = dict((k, v) for k, v, _ in LAB_SCHEDULER_PARAMETERS)
    p = params_from_conf(new)
    assert (p.sched_interval_s, p.bf_interval_s, p.bf_window_s, p.bf_max_job_test, p.default_queue_depth,
            p.bf_resolution_s) == (int(table["sched_interval"]), int(table["bf_interval"]),
                                   60 * int(table["bf_window"]), int(table["bf_max_job_test"]),
                                   int(table["default_queue_depth"]), int(table["bf_resolution"]))


def test_the_lab_writes_the_table_into_its_slurm_conf() -> None:
    # a fresh lab already has the table's line, so a replay in it reconfigures nothing
    from slurm_gpu.lab.config import slurm_conf
    from tests.lab.test_config import SPEC, V2205, rt

    text = slurm_conf(SPEC, rt(V2205))
    assert lab_scheduler_line() in text.splitlines() and with_lab_scheduler(text) is None


def test_figures_per_class() -> None:
    # a, b in class x; c, d in class y. Real (submit, start); simulated start.
    real = {"a": (0, 10), "b": (0, 20), "c": (0, 30), "d": (0, 40)}
    sim = {"a": 12, "b": 18, "c": 40, "d": 30}
    got = compare_classes(real, sim, {"a": ("x",), "b": ("x",), "c": ("y",), "d": ("y",)})
    assert list(got) == ["all", "x", "y"]
    assert got["all"] == compare(real, sim)
    assert got["x"].tau_b == 1.0 and got["x"].median_abs_error_s == 2.0 and got["x"].mean_wait_s == 15.0
    assert got["y"].tau_b == -1.0 and got["y"].median_abs_error_s == 10.0 and got["y"].error_of_wait == 10 / 35


def test_replay_from_two_records_prints_real_against_real_per_class(tmp_path: Path) -> None:
    import json

    trace = str(DATA / "lab-trace-200.csv")
    one, three = str(DATA / "lab-replay-22.05.8.csv"), str(DATA / "lab-replay-22.05.8-run3.csv")
    res = CliRunner().invoke(cli, ["simulate", "--policy", UNIVERSITY, "--trace", trace, "--out", str(tmp_path),
                                   "--replay-from", one, "--replay-from", three])
    assert res.exit_code == 0, res.output
    assert "real-vs-real" in res.output and "partition=interactive" in res.output and "qos=debug" in res.output
    doc = json.loads((tmp_path / "replay-summary.json").read_text())
    assert set(doc) >= {"simulated_vs_real", "real_vs_real", "params"}
    assert doc["real_vs_real"]["all"]["jobs"] == 200 and 0.9 < doc["real_vs_real"]["all"]["tau_b"] <= 1
    assert {"partition=batch", "partition=spot", "qos=high"} <= set(doc["simulated_vs_real"])
    js = CliRunner().invoke(cli, ["simulate", "--policy", UNIVERSITY, "--trace", trace, "--out", str(tmp_path),
                                  "--replay-from", one, "--json"])
    assert js.exit_code == 0 and json.loads(js.output)["simulated_vs_real"]["all"]["jobs"] == 200


def test_lab_timing_measures_tenths_from_whole_seconds() -> None:
    from slurm_gpu.sim.params import Params
    from slurm_gpu.sim.validate import TICKS, LabTiming, in_ticks, lab_timing

    # (submit, start, end, sleep, runs): a, b, c ran once and took 10 s + 1, 0, 0 s of whole-second
    # truncation: overhead 1/3 s = 3 ticks. b waited and started 1 s after a's end, c 0 s after b's:
    # release 0.5 s = 5 ticks. d ran twice (requeued): not counted in the overhead; e started 5 s after
    # the latest end (not an end's start): not counted in the release.
    runs = [(0, 0, 11, 10, 1), (5, 12, 22, 10, 1), (6, 22, 32, 10, 1), (0, 0, 50, 10, 2), (30, 37, 47, 10, 1)]
    got = lab_timing(runs[:4])
    assert got == LabTiming(overhead=3, release=5)
    assert lab_timing(runs).release == 5 and lab_timing([]) == LabTiming(0, 0)
    p = in_ticks(Params(bf_interval_s=5, sched_interval_s=5, bf_resolution_s=60, clock0_s=7), got)
    assert (p.bf_interval_s, p.sched_interval_s, p.bf_resolution_s, p.clock0_s, p.release_s, p.sched_delay_s) == (
        5 * TICKS, 5 * TICKS, 60 * TICKS, 7 * TICKS, 0, 5)


def test_lab_timing_in_milliseconds_takes_medians_the_submit_delay_and_the_backfill_phase() -> None:
    from slurm_gpu.sim.validate import TICKS_MS, LabTiming, lab_timing, phase_ticks

    # (submit, start, end, sleep, runs) from slurmctld's log: a starts 0.6 s after its submission (at
    # once); b waits for a's end and starts 0.08 s after it, c 0.1 s after b's; d starts 1.9 s after
    # c's end (a backfill start, not the pass c's end queued: the median leaves it out); e starts
    # 0.4 s after its submission with no end in between
    runs = [(0.2, 0.8, 11.0, 10, 1), (5.0, 11.08, 21.2, 10, 1), (6.0, 21.3, 31.4, 10, 1),
            (7.0, 33.3, 43.3, 10, 1), (50.0, 50.4, 60.5, 10, 1)]
    got = lab_timing(runs, TICKS_MS, [33.3, 48.25, 3.2], 5)
    assert got == LabTiming(overhead=104, release=100, submit_delay=500, ticks=TICKS_MS, bf_phase=3250)
    assert lab_timing(runs, TICKS_MS).bf_phase is None
    # around the circle: 4.9 and 0.1 (and 0.2) past multiples of 5 have their median at 0.1
    assert phase_ticks([4.9, 5.1, 10.2], 5, TICKS_MS) == 100 and phase_ticks([], 5, 1000) is None
    assert phase_ticks([4.8, 9.9, 14.9], 5, 10) == 49


# The recorded lab runs of the shaped traces (22.05.8, a private lab on the 2-CPU VM shared with other
# work, 2026-12-02; docs/simulate.md "Traces of other shapes"): the simulator as it is now must meet
# issue 26's goals on each, as a whole and per partition and QOS where the class has waits to order.
RECORDS = [("debug-cap", "run1"), ("gang", "run1"), ("spot", "run1"), ("array", "run1"),
           # with slurmctld's milliseconds, the machine loaded on purpose (docs/simulate.md)
           ("debug-cap", "run3"), ("debug-cap", "run4"), ("debug-cap", "run5"), ("spot", "run2"), ("gang", "run2"),
           ("array", "run2"),
           # in fresh roots of Debian 13 and testing (.ci/in-root), 26.05 without backfill's start lines
           ("debug-cap", "24.11.5"), ("debug-cap", "26.05.5")]
TAU_GOAL, ERROR_GOAL = 0.9, 0.15


@pytest.mark.parametrize(("shape", "run"), RECORDS, ids=[f"{s}-{r}" for s, r in RECORDS])
def test_the_simulator_meets_the_goals_on_each_recorded_shape(shape: str, run: str) -> None:
    from slurm_gpu.sim.replay import classes_of, compare_with, read_record, truth_of

    trace = str(DATA / f"lab-trace-{shape}.csv")
    real, params = read_record(str(DATA / f"lab-replay-{shape}-{run}.csv"))
    assert params is not None
    jobs = routed(UNIVERSITY, trace, 15)
    cmp, rows = compare_with(jobs, real, UNIVERSITY, params)
    assert cmp.jobs == len(jobs) and not cmp.missing
    assert cmp.tau_b is not None and cmp.tau_b >= TAU_GOAL, cmp
    assert cmp.error_of_wait is not None and cmp.error_of_wait <= ERROR_GOAL, cmp
    per = compare_classes(truth_of(real), {k: s for k, _sub, _r, s, _p in rows}, classes_of(jobs))
    for label, c in per.items():
        assert c.tau_b is None or c.tau_b >= TAU_GOAL - 0.05, (label, c)
        # a class whose jobs barely wait: its error in seconds against the whole trace's mean wait
        assert c.median_abs_error_s is not None and c.median_abs_error_s <= ERROR_GOAL * (cmp.mean_wait_s or 0), (
            label, c)


# Pairs of real runs of one trace (docs/simulate.md "Times to the millisecond"): the simulator against
# the first, real run 2 against it too, per partition and QOS. Compared to the millisecond where both
# records have slurmctld's times, else in sacct's whole seconds. The floor: where real Slurm repeats
# itself to within the figures' resolution, "twice real against real" would ask for less than the
# resolution itself: 1 s for whole seconds; for milliseconds 0.5 s, the lab's own spread of the delay
# from a submission to a start that waited for nothing (0.0-0.7 s in these records).
PAIRS = [("debug-cap", "run3", "run4"), ("debug-cap", "run4", "run3"), ("gang", "run2", "run1"),
         ("spot", "run2", "run1"), ("array", "run2", "run1"), ("debug-cap", "run5", "run3"),
         ("debug-cap", "run1", "run2")]
FLOOR_S = {True: 0.5, False: 1.0}


@pytest.mark.parametrize(("shape", "first", "second"), PAIRS, ids=["-".join(p) for p in PAIRS])
def test_per_class_the_simulator_is_within_twice_real_against_real(shape: str, first: str, second: str) -> None:
    from slurm_gpu.sim.replay import classes_of, compare_with, read_record, truth_of

    trace = str(DATA / f"lab-trace-{shape}.csv")
    one, params = read_record(str(DATA / f"lab-replay-{shape}-{first}.csv"))
    two, _ = read_record(str(DATA / f"lab-replay-{shape}-{second}.csv"))
    assert params is not None and len(one) == len(two)
    jobs = routed(UNIVERSITY, trace, 15)
    _cmp, rows = compare_with(jobs, one, UNIVERSITY, params)
    ms = all(r.start_ms is not None for r in one + two)
    classes = classes_of(jobs)
    sim = compare_classes(truth_of(one), {k: s for k, _sub, _r, s, _p in rows}, classes)
    real = compare_classes(truth_of(one, ms), {k: s for k, (_b, s) in truth_of(two, ms).items()}, classes)
    assert set(sim) == set(real) and len(sim) >= 3
    for label, c in sim.items():
        r = real[label]
        assert c.median_abs_error_s is not None and r.median_abs_error_s is not None
        assert c.median_abs_error_s <= max(2 * r.median_abs_error_s, FLOOR_S[ms]), (label, c, r)
        assert c.tau_b is not None and r.tau_b is not None and c.tau_b >= r.tau_b - 0.05, (label, c, r)
