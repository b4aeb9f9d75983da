# SPDX-License-Identifier: Apache-2.0
"""Pure MIG planning: placement on the recorded H100 placement table, diffs, the NVML-rule simulation,
and properties (apply(plan(current, desired)) is desired; any job layout restores to the default)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_gpu.sharing import mig as M
from slurm_gpu.sharing.mig import Action, GpuInstance, Layout, MigError, MigState

FIXTURE = Path(__file__).resolve().parents[1] / "nvml_standin" / "fixtures" / "h100-8gpu.json"


def recorded_geometry() -> dict[str, M.Profile]:
    """The H100 80GB profile table as recorded (`nvidia-smi mig -lgip` / `-lgipp`), not from our code."""
    table = json.loads(FIXTURE.read_text())["mig_profiles"]
    return {p["name"]: M.Profile(p["name"], p["slices"], p["memory_slices"], p["count"], tuple(p["placements"]))
            for p in table.values()}


GEO = recorded_geometry()
OFF = MigState(False)


@pytest.mark.parametrize(("devices", "expected"), [
    ({"3g.40gb": 2}, (("3g.40gb", 0), ("3g.40gb", 4))),
    ({"4g.40gb": 1, "3g.40gb": 1}, (("4g.40gb", 0), ("3g.40gb", 4))),
    ({"1g.20gb": 4}, (("1g.20gb", 0), ("1g.20gb", 2), ("1g.20gb", 4), ("1g.20gb", 6))),
    ({"2g.20gb": 3, "1g.10gb": 1}, (("2g.20gb", 0), ("2g.20gb", 2), ("2g.20gb", 4), ("1g.10gb", 6))),
    ({"7g.80gb": 1}, (("7g.80gb", 0),)),
    ({"1g.10gb": 7}, tuple(("1g.10gb", s) for s in range(7))),
])
def test_place_on_the_recorded_placements(devices, expected):
    assert M.place(Layout.of(True, devices), GEO) == expected


@pytest.mark.parametrize(("devices", "why"), [
    ({"3g.40gb": 3}, "allows 2"),
    ({"1g.20gb": 4, "1g.10gb": 1}, "does not fit"),  # 5 compute slices, but all 8 memory slices are taken
    ({"7g.80gb": 1, "1g.10gb": 1}, "compute slices"),
    ({"2g.10gb": 1}, "not supported by this GPU"),
    ({"4g.40gb": 1, "1g.20gb": 3}, "does not fit"),  # 7 compute slices; 1g.20gb at 4 and 6 only after 4g@0
])
def test_place_refuses_what_does_not_fit(devices, why):
    with pytest.raises(MigError, match=why):
        M.place(Layout.of(True, devices), GEO)


def test_plan_enable_and_create_then_tear_down():
    job = Layout.of(True, {"3g.40gb": 2})
    assert M.plan_gpu(3, OFF, job, GEO) == (
        Action("set_mig_mode", 3, enable=True),
        Action("create_gi", 3, "3g.40gb", 0), Action("create_ci", 3, "3g.40gb", 0, 3),
        Action("create_gi", 3, "3g.40gb", 4), Action("create_ci", 3, "3g.40gb", 4, 3),
    )
    on = MigState(True, (GpuInstance("3g.40gb", 0, (3,)), GpuInstance("3g.40gb", 4, (3,))))
    assert M.plan_gpu(3, on, job, GEO) == ()
    assert M.plan_gpu(3, on, Layout(False), GEO) == (
        Action("destroy_ci", 3, "3g.40gb", 0, 3), Action("destroy_gi", 3, "3g.40gb", 0),
        Action("destroy_ci", 3, "3g.40gb", 4, 3), Action("destroy_gi", 3, "3g.40gb", 4),
        Action("set_mig_mode", 3, enable=False),
    )


def test_plan_repairs_only_compute_instances_when_gpu_instances_match():
    broken = MigState(True, (GpuInstance("3g.40gb", 0, ()), GpuInstance("3g.40gb", 4, (1, 1))))
    assert M.plan_gpu(0, broken, Layout.of(True, {"3g.40gb": 2}), GEO) == (
        Action("create_ci", 0, "3g.40gb", 0, 3),
        Action("destroy_ci", 0, "3g.40gb", 4, 1), Action("destroy_ci", 0, "3g.40gb", 4, 1),
        Action("create_ci", 0, "3g.40gb", 4, 3),
    )


def test_plan_touches_only_the_jobs_gpus_and_refuses_before_changing_any():
    current = {i: OFF for i in range(8)}
    geometry = dict.fromkeys(range(8), GEO)
    actions = M.plan(current, Layout.of(True, {"7g.80gb": 1}), geometry, [5, 2])
    assert {a.gpu for a in actions} == {2, 5}
    with pytest.raises(MigError):
        M.plan(current, Layout.of(True, {"7g.80gb": 2}), geometry, [2, 5])
    with pytest.raises(MigError, match="GPU 9"):
        M.plan(current, Layout(False), geometry, [9])


def test_drifted_static_layout():
    declared = Layout.of(True, {"1g.10gb": 7})
    fine = MigState(True, tuple(GpuInstance("1g.10gb", s, (1,)) for s in range(7)))
    changed = MigState(True, (GpuInstance("3g.40gb", 0, (3,)),))
    assert M.drifted({0: fine, 1: changed, 2: OFF}, declared, dict.fromkeys(range(3), GEO), [0, 1, 2]) == (1, 2)


def test_apply_follows_nvml_rules():
    on = {0: MigState(True, (GpuInstance("3g.40gb", 0, (3,)),))}
    for bad in (Action("destroy_gi", 0, "3g.40gb", 0), Action("set_mig_mode", 0, enable=False),
                Action("create_gi", 0, "4g.40gb", 0), Action("create_ci", 0, "3g.40gb", 0, 1),
                Action("destroy_ci", 0, "3g.40gb", 4, 3)):
        with pytest.raises(MigError):
            M.apply(on, [bad], {0: GEO})
    with pytest.raises(MigError):
        M.apply({0: OFF}, [Action("create_gi", 0, "1g.10gb", 0)], {0: GEO})


# ---- properties -------------------------------------------------------------------------------

PROFILES = sorted(GEO)


@st.composite
def layouts(draw) -> Layout:
    """A random layout that fits the GPU (built by placing instances one by one with the simulator)."""
    if not draw(st.booleans()):
        return Layout(False)
    devices: dict[str, int] = {}
    for _ in range(draw(st.integers(0, 7))):
        p = draw(st.sampled_from(PROFILES))
        trial = {**devices, p: devices.get(p, 0) + 1}
        try:
            M.place(Layout.of(True, trial), GEO)
        except MigError:
            continue
        devices = trial
    return Layout.of(True, devices)


@st.composite
def states(draw) -> MigState:
    """A random reachable state: a layout, then some compute instances destroyed or split."""
    layout = draw(layouts())
    state = M.apply({0: OFF}, M.plan_gpu(0, OFF, layout, GEO), {0: GEO})[0]
    out = []
    for g in state.instances:
        cis = draw(st.sampled_from([g.cis, (), tuple([1] * min(2, GEO[g.profile].slices))]))
        out.append(GpuInstance(g.profile, g.start, cis))
    return MigState(state.enabled, tuple(out))


@settings(max_examples=300, deadline=None)
@given(states(), layouts())
def test_apply_plan_reaches_the_desired_layout(current, desired):
    actions = M.plan_gpu(0, current, desired, GEO)
    after = M.apply({0: current}, actions, {0: GEO})[0]
    assert M.satisfies(after, desired, GEO)
    assert M.plan_gpu(0, after, desired, GEO) == ()  # idempotent: a second run changes nothing


@settings(max_examples=200, deadline=None)
@given(layouts(), layouts())
def test_restore_after_any_job_layout_returns_to_default(default, job):
    start = M.apply({0: OFF}, M.plan_gpu(0, OFF, default, GEO), {0: GEO})[0]
    during = M.apply({0: start}, M.plan_gpu(0, start, job, GEO), {0: GEO})[0]
    after = M.apply({0: during}, M.plan_gpu(0, during, default, GEO), {0: GEO})[0]
    assert M.satisfies(after, default, GEO)
    assert Layout.of(after.enabled, ((g.profile, 1) for g in after.instances)) == default


def test_inventory_registered_against_present():
    """The epilog's comparison of slurmd's registered devices with the driver's (sharing.mig): slices by
    profile (slurm.conf type <gpu type>_<profile>), whole GPUs under WHOLE, counts compared per kind."""
    from slurm_gpu.sharing.mig import (
        WHOLE,
        GpuInstance,
        MigState,
        inventory_differences,
        present_inventory,
        registered_inventory,
    )

    reg = registered_inventory([("a100_2g.20gb", 12), ("a100_1g.10gb", 4), ("a100", 1), (None, 1)], "a100")
    assert reg == {"2g.20gb": 12, "1g.10gb": 4, WHOLE: 2}
    on = MigState(True, tuple(GpuInstance(p, s) for p, s in (("2g.20gb", 0), ("2g.20gb", 2), ("2g.20gb", 4),
                                                              ("1g.10gb", 6))))
    present = present_inventory({0: on, 1: on, 2: on, 3: on, 4: MigState(False), 5: MigState(False, ())})
    assert inventory_differences(reg, present) == []
    less = present_inventory({0: on, 1: on, 2: on, 3: MigState(True, on.instances[:3]), 4: MigState(False)})
    assert inventory_differences(reg, less) == ["whole GPUs: slurmd registered 2, the driver has 1",
                                                "1g.10gb: slurmd registered 4, the driver has 3"]
    assert inventory_differences({}, {"3g.40gb": 2}) == ["3g.40gb: slurmd registered 0, the driver has 2"]
