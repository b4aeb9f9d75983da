# SPDX-License-Identifier: Apache-2.0
"""MIG through the real binding: enable, create GPU/compute instances, MIG UUIDs, destroy, persistence.

Profile numbers are the recorded `nvidia-smi mig -lgip` of an H100 80GB (fixtures/h100-8gpu.json
"source"): ID, instances, memory GiB, SMs."""

from __future__ import annotations

import re

MIG_UUID = re.compile(r"MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

LGIP = {  # NVML_GPU_INSTANCE_PROFILE_* -> (name, id, instances, memory GiB, SMs)
    0: ("MIG 1g.10gb", 19, 7, 9.75, 16),
    7: ("MIG 1g.10gb+me", 20, 1, 9.75, 16),
    9: ("MIG 1g.20gb", 15, 4, 19.62, 26),
    1: ("MIG 2g.20gb", 14, 3, 19.62, 32),
    2: ("MIG 3g.40gb", 9, 2, 39.50, 60),
    3: ("MIG 4g.40gb", 5, 1, 39.50, 64),
    4: ("MIG 7g.80gb", 0, 1, 79.25, 132),
}

CREATE_TWO_3G = """
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(5)
activation = N.nvmlDeviceSetMigMode(h, N.NVML_DEVICE_MIG_ENABLE)
gp = N.nvmlDeviceGetGpuInstanceProfileInfo(h, N.NVML_GPU_INSTANCE_PROFILE_3_SLICE)
for _ in range(2):
    gi = N.nvmlDeviceCreateGpuInstance(h, gp.id)
    cp = N.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, N.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE,
                                                         N.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
    N.nvmlGpuInstanceCreateComputeInstance(gi, cp.id)
out([activation, err(N.nvmlDeviceCreateGpuInstance, h, gp.id)])
"""

LIST_MIG = """
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(5)
rows = []
for k in range(N.nvmlDeviceGetMaxMigDeviceCount(h)):
    try:
        m = N.nvmlDeviceGetMigDeviceHandleByIndex(h, k)
    except (N.NVMLError_NotFound, N.NVMLError_NotSupported):  # no more / MIG disabled
        break
    parent = N.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(m)
    back = N.nvmlDeviceGetHandleByUUID(N.nvmlDeviceGetUUID(m))
    rows.append([N.nvmlDeviceGetUUID(m), N.nvmlDeviceGetName(m), N.nvmlDeviceGetMemoryInfo(m).total >> 20,
                 N.nvmlDeviceGetGpuInstanceId(m), N.nvmlDeviceGetComputeInstanceId(m),
                 N.nvmlDeviceGetUUID(parent), bool(N.nvmlDeviceIsMigDeviceHandle(m)),
                 N.nvmlDeviceGetUUID(back) == N.nvmlDeviceGetUUID(m)])
out([N.nvmlDeviceGetMigMode(h), rows])
"""

DESTROY_ALL = """
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(5)
gp = N.nvmlDeviceGetGpuInstanceProfileInfo(h, N.NVML_GPU_INSTANCE_PROFILE_3_SLICE)
gis = (N.c_nvmlGpuInstance_t * gp.instanceCount)()
count = N.c_uint()
N.nvmlDeviceGetGpuInstances(h, gp.id, gis, N.byref(count))
busy = err(N.nvmlGpuInstanceDestroy, gis[0])
for gi in gis[:count.value]:
    cp = N.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, N.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, 0)
    cis = (N.c_nvmlComputeInstance_t * cp.instanceCount)()
    n = N.c_uint()
    N.nvmlGpuInstanceGetComputeInstances(gi, cp.id, cis, N.byref(n))
    for ci in cis[:n.value]:
        N.nvmlComputeInstanceDestroy(ci)
    N.nvmlGpuInstanceDestroy(gi)
out([count.value, busy, N.nvmlDeviceSetMigMode(h, N.NVML_DEVICE_MIG_DISABLE), N.nvmlDeviceGetMigMode(h)])
"""


def test_dynamic_mig_layout_round_trip_across_processes(node):
    n = node("h100-8gpu")
    assert n.run(CREATE_TWO_3G) == [0, "NVMLError_InsufficientResources"]  # 3g.40gb: 2 instances (lgip)
    mode, rows = n.run(LIST_MIG)  # a second process sees the layout
    assert mode == [1, 1] and len(rows) == 2
    uuids = [r[0] for r in rows]
    assert all(MIG_UUID.fullmatch(u) for u in uuids) and len(set(uuids)) == 2
    for row, gi in zip(rows, (1, 2), strict=True):
        assert row[1:] == [
            "NVIDIA H100 80GB HBM3 MIG 3g.40gb",
            round(39.50 * 1024),
            gi,
            0,
            "GPU-00000005-0000-0000-0000-000000000005",
            True,
            True,
        ]
    assert sorted(n.read()["gpus"][5]["ci." + k] for k in ("1.0", "2.0")) == sorted(f"2:{u}" for u in uuids)
    assert n.run(DESTROY_ALL) == [2, "NVMLError_InUse", 0, [0, 0]]  # a GI with a CI cannot go first
    assert n.run(LIST_MIG) == [[0, 0], []]
    assert not any(k.startswith(("gi.", "ci.")) for k in n.read()["gpus"][5])
    n.run(CREATE_TWO_3G)
    again = [r[0] for r in n.run(LIST_MIG)[1]]
    assert not set(again) & set(uuids)  # re-created instances get new UUIDs, as on hardware


def test_gpu_instance_profiles_are_the_recorded_ones(node):
    got = node("h100-8gpu").run(
        """
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(0)
rows = {}
for p in range(N.NVML_GPU_INSTANCE_PROFILE_COUNT):
    try:
        i = N.nvmlDeviceGetGpuInstanceProfileInfo(h, p)
        v1 = N.nvmlDeviceGetGpuInstanceProfileInfo(h, p, version=1)
    except N.NVMLError_NotSupported:
        continue
    rows[p] = [i.name, i.id, i.instanceCount, i.memorySizeMB, i.multiprocessorCount, v1.id == i.id]
out([rows, err(N.nvmlDeviceGetGpuInstanceProfileInfo, h, 99)])
"""
    )
    expected = {
        str(p): [name, pid, count, round(gib * 1024), sm, True] for p, (name, pid, count, gib, sm) in LGIP.items()
    }
    assert got == [expected, "NVMLError_InvalidArgument"]


def test_placements_and_remaining_capacity(node):
    got = node("h100-8gpu", edit=lambda d: d["gpus"][0].update(mig_current=1, mig_pending=1)).run(
        """
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(0)
ids = {p: N.nvmlDeviceGetGpuInstanceProfileInfo(h, p).id for p in (0, 2, 3)}
arr = (N.c_nvmlGpuInstancePlacement_t * 8)()
n = N.c_uint(8)
N.nvmlDeviceGetGpuInstancePossiblePlacements(h, ids[2], arr, N.byref(n))
places = [[arr[i].start, arr[i].size] for i in range(n.value)]
pl = N.c_nvmlGpuInstancePlacement_t(4, 4)
gi = N.nvmlDeviceCreateGpuInstanceWithPlacement(h, ids[2], N.byref(pl))  # nvml.h takes a pointer
info = N.nvmlGpuInstanceGetInfo(gi)
after_3g = [N.nvmlDeviceGetGpuInstanceRemainingCapacity(h, ids[p]) for p in (0, 2, 3)]
N.nvmlDeviceCreateGpuInstance(h, ids[3])
after_4g = [N.nvmlDeviceGetGpuInstanceRemainingCapacity(h, ids[p]) for p in (0, 2, 3)]
out([places, [info.id, info.profileId, info.placement.start, info.placement.size], after_3g, after_4g,
     err(N.nvmlDeviceCreateGpuInstance, h, ids[0])])
"""
    )
    # 3g.40gb may start at memory slice 0 or 4 (4 slices); after 3g@4 the 1g slots 0-3 and the 4g@0 remain
    assert got == [[[0, 4], [4, 4]], [1, 9, 4, 4], [4, 1, 1], [0, 0, 0], "NVMLError_InsufficientResources"]


def test_compute_instances_inside_a_gpu_instance(node):
    got = node("h100-8gpu", edit=lambda d: d["gpus"][0].update(mig_current=1, mig_pending=1)).run(
        """
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(0)
gi = N.nvmlDeviceCreateGpuInstance(h, N.nvmlDeviceGetGpuInstanceProfileInfo(h, 2).id)
one = N.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, N.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 0)
cis = [N.nvmlGpuInstanceCreateComputeInstance(gi, one.id) for _ in range(3)]
names = sorted(N.nvmlDeviceGetName(N.nvmlDeviceGetMigDeviceHandleByIndex(h, k)) for k in range(3))
info = N.nvmlComputeInstanceGetInfo(cis[2])
out([one.instanceCount, names[0], info.id, info.placement.start,
     err(N.nvmlGpuInstanceCreateComputeInstance, gi, one.id),
     err(N.nvmlGpuInstanceGetComputeInstanceProfileInfo, gi, N.NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, 0)])
"""
    )
    assert got == [
        3,
        "NVIDIA H100 80GB HBM3 MIG 3g.40gb",
        2,
        2,
        "NVMLError_InsufficientResources",
        "NVMLError_NotSupported",
    ]


def test_instances_need_mig_mode_and_a_capable_gpu(node, helpers):
    from pathlib import Path

    xml = (Path(__file__).resolve().parents[1] / "topology" / "data" / "h200-1gpu-vm.nvidia-smi-q.xml").read_text()
    h200 = helpers.state.fixture_from_smi_xml(xml)
    got = node("h100-8gpu").run(
        """
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(0)
out([err(N.nvmlDeviceCreateGpuInstance, h, 9), err(N.nvmlDeviceGetMigDeviceHandleByIndex, h, 0)])
"""
    )
    assert got == ["NVMLError_NotSupported", "NVMLError_NotSupported"]
    # the H200 VM recording says MIG Disabled (capable) but no lgip table was recorded: nothing to create
    got = node(h200).run(
        """
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(0)
out([N.nvmlDeviceGetMigMode(h), err(N.nvmlDeviceGetGpuInstanceProfileInfo, h, 2)])
"""
    )
    assert got == [[0, 0], "NVMLError_NotSupported"]


def test_processes_on_a_mig_device_block_its_destruction(node):
    import subprocess

    sleeper = subprocess.Popen(["sleep", "60"])
    try:

        def edit(d):
            d["gpus"][0].update(mig_current=1, mig_pending=1)

        n = node("h100-8gpu", edit=edit)
        n.run(CREATE_TWO_3G.replace("Index(5)", "Index(0)"))
        text = n.path.read_text().replace("gpu.0.processes=", f"gpu.0.processes={sleeper.pid}:512:1:0")
        n.path.write_text(text)
        got = n.run(
            """
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(0)
m1, m2 = (N.nvmlDeviceGetMigDeviceHandleByIndex(h, k) for k in (0, 1))
gi = N.nvmlDeviceGetGpuInstanceById(h, 1)
ci = N.nvmlGpuInstanceGetComputeInstanceById(gi, 0)
procs = [[p.pid, p.gpuInstanceId, p.computeInstanceId] for p in N.nvmlDeviceGetComputeRunningProcesses(m1)]
out([procs, len(N.nvmlDeviceGetComputeRunningProcesses(m2)), err(N.nvmlComputeInstanceDestroy, ci),
     N.nvmlDeviceSetMigMode(h, 0)])
"""
        )
        assert got == [[[sleeper.pid, 1, 0]], 0, "NVMLError_InUse", 19]
    finally:
        sleeper.kill()
        sleeper.wait()
