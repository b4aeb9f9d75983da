# SPDX-License-Identifier: Apache-2.0
"""The pure part of the validation against real Slurm: Kendall's tau-b against hand-computed values, the
comparison, the compression, the lab trace's rule and the slurm.conf -> parameters mapping."""

from __future__ import annotations

import math

import pytest

from slurm_gpu.policy import load_policy
from slurm_gpu.sim.routing import Route, Router
from slurm_gpu.sim.traces import Trace, TraceJob, read_trace
from slurm_gpu.sim.validate import (
    FixedRoutes,
    compare,
    compress,
    kendall_tau_b,
    lab_trace,
    median,
    params_from_conf,
    release_gap,
)

from .helpers import DATA

UNIVERSITY = DATA.parents[2] / "examples" / "policies" / "university.yaml"


@pytest.mark.parametrize(("x", "y", "tau"), [
    ([1, 2, 3], [1, 2, 3], 1.0),
    ([1, 2, 3], [3, 2, 1], -1.0),
    # pairs: 5 concordant, (2,3) discordant -> 4/6
    ([1, 2, 3, 4], [1, 3, 2, 4], 4 / 6),
    # one pair tied in x; 2 concordant -> 2 / sqrt((3-1)(3-0))
    ([1, 1, 2], [1, 2, 3], 2 / math.sqrt(6)),
    # (0,1) tied in both, (2,3) tied in x; 4 concordant -> 4 / sqrt((6-2)(6-1))
    ([1, 1, 2, 2], [1, 1, 2, 3], 4 / math.sqrt(20)),
    # (0,2) and (1,2) discordant, (0,1) tied in y -> -2 / sqrt((3-0)(3-1))
    ([1, 2, 3], [5, 5, 4.5], -2 / math.sqrt(6)),
])
def test_kendall_tau_b_hand_computed(x: list[float], y: list[float], tau: float) -> None:
    assert kendall_tau_b(x, y) == pytest.approx(tau)


def test_kendall_tau_b_undefined_and_bad_input() -> None:
    assert kendall_tau_b([1, 1, 1], [1, 2, 3]) is None
    assert kendall_tau_b([1], [1]) is None
    with pytest.raises(ValueError):
        kendall_tau_b([1, 2], [1])


def test_median() -> None:
    assert median([3, 1, 2]) == 2
    assert median([4, 1, 2, 3]) == 2.5
    assert median([]) is None


def test_compare_hand_computed() -> None:
    real = {"a": (0, 10), "b": (0, 20), "c": (5, 15), "e": (0, 30)}
    sim = {"a": 12, "b": 20, "c": 14, "d": None}
    c = compare(real, sim)
    assert c.jobs == 3
    assert c.missing == ("e",)
    assert c.tau_b == pytest.approx(1.0)
    assert c.median_abs_error_s == 1.0  # errors 2, 0, 1
    assert c.mean_wait_s == pytest.approx(40 / 3)  # waits 10, 20, 10
    assert c.error_of_wait == pytest.approx(0.075)


def test_compare_swapped_order() -> None:
    c = compare({"a": (0, 10), "b": (0, 20)}, {"a": 20, "b": 10})
    assert c.tau_b == pytest.approx(-1.0) and c.median_abs_error_s == 10.0


def test_compress_divides_times_and_rounds_limits_up_to_minutes() -> None:
    trace = Trace((TraceJob("x", 1000, 300), TraceJob("y", 1090, 7), TraceJob("z", 1200, 60)), "epoch")
    route = Route("c", "batch", "normal", "h100", 1, 1, 0, 2700)
    jobs, rejected = compress(trace, [route, route._replace(time_limit_s=900), "no"], 15)
    assert rejected == ["z"]
    assert [(r.job.submit, r.job.duration, r.job.time_limit_s) for r in jobs] == [(0, 20, 180), (6, 1, 60)]
    assert [r.route.time_limit_s for r in jobs] == [180, 60]
    routes = FixedRoutes(jobs)
    assert routes.route(jobs[1].job) == jobs[1].route and routes.route(TraceJob("q", 0, 1)) == "not in the replay"


def test_the_lab_trace_fixture_is_the_documented_rule() -> None:
    assert (DATA / "lab-trace-200.csv").read_text() == lab_trace(14, 200)


def test_the_lab_trace_mixes_classes_sizes_and_both_gpu_types() -> None:
    policy = load_policy(str(UNIVERSITY))
    trace = read_trace(lab_trace().splitlines(), "lab.csv")
    routes = [Router(policy).route(j) for j in trace.jobs]
    assert len(trace.jobs) == 200 and all(not isinstance(r, str) for r in routes)
    ok = [r for r in routes if not isinstance(r, str)]
    assert {r.job_class for r in ok} == {"debug", "spot", "priority", "production"}
    assert {r.gpu_type for r in ok} == {"h100", "a100"}
    sizes = {r.nodes * r.gpus_per_node for r in ok}
    assert min(sizes) == 1 and max(sizes) == 16


LAB_SCHED = """
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=5,bf_interval=5
PreemptType=preempt/partition_prio
"""


def test_params_of_the_lab_conf_priority_basic() -> None:
    p = params_from_conf(LAB_SCHED, (22, 5, 8))
    assert p.backfill and p.bf_interval_s == 5 and p.bf_window_s == 86400 and p.bf_max_job_test == 500
    assert (p.weight_age, p.weight_qos, p.weight_partition, p.weight_fairshare) == (0, 0, 0, 0)
    assert p.preempt_type == "partition_prio"
    assert (p.sched_interval_s, p.default_queue_depth) == (5, 100)  # the lab's sched_interval; Slurm's depth


def test_params_of_the_main_scheduler_limits() -> None:
    p = params_from_conf("SchedulerParameters=default_queue_depth=250,sched_interval=-1,bf_max_job_test=40")
    assert (p.default_queue_depth, p.sched_interval_s, p.bf_max_job_test) == (250, 0, 40)  # -1: no full pass
    p = params_from_conf("")
    assert (p.default_queue_depth, p.sched_interval_s, p.bf_max_job_test) == (100, 60, 500)  # Slurm's defaults


def test_params_of_a_multifactor_conf() -> None:
    text = """# a comment: PriorityType=priority/basic
SchedulerType=sched/backfill
SchedulerParameters=bf_window=4320,bf_interval=120,bf_max_job_test=2500,bf_continue
PriorityType=priority/multifactor
PriorityWeightAge=70000 PriorityWeightQOS=50000
PriorityWeightPartition=1000000
PriorityWeightFairshare=120000
PriorityMaxAge=2-0
PriorityDecayHalfLife=1-0
PriorityCalcPeriod=5
PreemptType=preempt/qos
"""
    p = params_from_conf(text)
    assert (p.bf_window_s, p.bf_interval_s, p.bf_max_job_test) == (4320 * 60, 120, 2500)
    assert (p.weight_age, p.weight_qos, p.weight_partition, p.weight_fairshare) == (70000, 50000, 1000000, 120000)
    assert (p.max_age_s, p.half_life_s, p.calc_period_s) == (2 * 86400, 86400, 300)
    assert p.preempt_type == "qos"


def test_params_defaults_depend_on_the_version() -> None:
    assert params_from_conf("PriorityWeightAge=10", (22, 5)).weight_age == 0  # priority/basic
    assert params_from_conf("PriorityWeightAge=10", (23, 11)).weight_age == 10  # multifactor by default
    p = params_from_conf("SchedulerType=sched/builtin")
    assert not p.backfill and p.preempt_type == "off" and p.bf_interval_s == 30


def test_params_match_what_the_lab_writes() -> None:
    from slurm_gpu.lab.config import LabPaths, LabRuntime, slurm_conf
    from slurm_gpu.lab.spec import spec_from_policy
    from slurm_gpu.topology import load_topology_file

    spec = spec_from_policy(load_policy(str(UNIVERSITY)), load_topology_file)
    conf = slurm_conf(spec, LabRuntime((22, 5, 8), "h", LabPaths("/tmp/x")))
    assert params_from_conf(conf, (22, 5, 8)) == params_from_conf(LAB_SCHED, (22, 5, 8))


def test_release_gap_hand_computed() -> None:
    # (submit, start, end): b waited and started 1 s after a's end (10); c waited and started 3 s after
    # b's end (20); d did not wait (not counted); e waited but started before any end (not counted)
    runs = [(0, 0, 10), (5, 11, 20), (6, 23, 30), (25, 25, 26), (0, 2, 9)]
    assert release_gap(runs) == 2  # median of 1 and 3
    assert release_gap([(0, 0, 5)]) == 0
