# SPDX-License-Identifier: Apache-2.0
"""The real nvidia-ml-py over the stand-in serves the recorded nodes' identity, memory and utilisation.

Expected values are written here from the recordings (tests/nvml_standin/fixtures/h100-8gpu.json, a
transcription of an 8x H100 `nvidia-smi -q -x`; tests/topology/data/h200-1gpu-vm.nvidia-smi-q.xml,
this project's own H200 capture), never read back from the library.
"""

from __future__ import annotations

import re
from pathlib import Path

H200_XML = Path(__file__).resolve().parents[1] / "topology" / "data" / "h200-1gpu-vm.nvidia-smi-q.xml"
H100_BUSES = ["53", "64", "75", "86", "97", "A8", "B9", "CA"]  # qx-h100.xml <gpu id=...>
MIB = 2**20

READ_ALL = """
N.nvmlInit()
rows = []
for i in range(N.nvmlDeviceGetCount()):
    h = N.nvmlDeviceGetHandleByIndex(i)
    pci = N.nvmlDeviceGetPciInfo(h)
    m1, m2 = N.nvmlDeviceGetMemoryInfo(h), N.nvmlDeviceGetMemoryInfo(h, N.nvmlMemory_v2)
    u = N.nvmlDeviceGetUtilizationRates(h)
    rows.append(dict(name=N.nvmlDeviceGetName(h), uuid=N.nvmlDeviceGetUUID(h), serial=N.nvmlDeviceGetSerial(h),
        bus=pci.busId, legacy=pci.busIdLegacy, bus_no=pci.bus, device_id=pci.pciDeviceId,
        subsys=pci.pciSubSystemId, minor=N.nvmlDeviceGetMinorNumber(h), index=N.nvmlDeviceGetIndex(h),
        v1=[m1.total, m1.free, m1.used], v2=[m2.total, m2.reserved, m2.free, m2.used], util=[u.gpu, u.memory],
        mode=N.nvmlDeviceGetComputeMode(h), persistence=N.nvmlDeviceGetPersistenceMode(h),
        mig=N.nvmlDeviceGetMigMode(h), ecc=N.nvmlDeviceGetEccMode(h),
        remap=list(N.nvmlDeviceGetRemappedRows(h)), pages=err(N.nvmlDeviceGetRetiredPages, h, 0),
        unc=N.nvmlDeviceGetTotalEccErrors(h, 1, 0),
        dram_unc=N.nvmlDeviceGetMemoryErrorCounter(h, 1, 0, N.NVML_MEMORY_LOCATION_DRAM),
        affinity=err(N.nvmlDeviceGetCpuAffinity, h, 4), numa=err(N.nvmlDeviceGetNumaNodeId, h)))
system = [N.nvmlSystemGetDriverVersion(), N.nvmlSystemGetNVMLVersion(), N.nvmlSystemGetCudaDriverVersion(),
          N.nvmlSystemGetCudaDriverVersion_v2()]
maps = [line.split()[-1] for line in open("/proc/self/maps") if "libnvidia-ml" in line]
N.nvmlShutdown()
out(dict(rows=rows, system=system, maps=sorted(set(maps))))
"""


def test_h100_node_serves_the_recorded_values(node, standin_lib):
    got = node("h100-8gpu").run(READ_ALL)
    assert got["maps"] == [str(standin_lib / "libnvidia-ml.so.1")]  # pynvml's own CDLL found the stand-in
    assert got["system"] == ["580.105.08", "13.580.105.08", 13000, 13000]
    rows = got["rows"]
    assert len(rows) == 8
    for i, (row, bus) in enumerate(zip(rows, H100_BUSES, strict=True)):
        assert row["name"] == "NVIDIA H100 80GB HBM3"
        assert row["uuid"] == f"GPU-0000000{i}-0000-0000-0000-00000000000{i}"
        assert row["serial"] == f"165000000000{i + 1}"
        assert row["bus"] == f"00000000:{bus}:00.0"
        assert row["legacy"] == f"0000:{bus}:00.0"
        assert row["bus_no"] == int(bus, 16)
        assert (row["device_id"], row["subsys"]) == (0x233010DE, 0x16C110DE)
        assert row["minor"] == i and row["index"] == i
        # fb_memory_usage: total 81559 MiB, reserved 480, used 0, free 81080 (nvidia-smi rounds each to MiB,
        # so the recorded free is total - reserved - used within one MiB; NVML's bytes add up exactly)
        total, reserved, free, used = row["v2"]
        assert (total, reserved, used) == (81559 * MIB, 480 * MIB, 0)
        assert free == total - reserved - used and abs(free - 81080 * MIB) <= MIB
        assert row["v1"] == [total, free, reserved + used]  # v1 counts reserved memory as used
        assert row["util"] == [0, 0]
        assert row["mode"] == 0 and row["persistence"] == 1
        assert row["mig"] == [0, 0] and row["ecc"] == [1, 1]
        assert row["remap"] == [0, 0, 0, 0]
        assert row["pages"] == "NVMLError_NotSupported"  # retired pages N/A on Hopper
        assert row["unc"] == 0 and row["dram_unc"] == 0
        assert row["affinity"] == "NVMLError_NotSupported"  # not in nvidia-smi -q: not invented
        assert row["numa"] == "NVMLError_NotSupported"


def test_h200_vm_from_the_projects_own_capture(node, helpers):
    fixture = helpers.state.fixture_from_smi_xml(H200_XML.read_text(), cpus={0: "0-15"})  # topo -m: 0-15
    got = node(fixture).run(
        """
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(0)
m = N.nvmlDeviceGetMemoryInfo(h, N.nvmlMemory_v2)
words = list(N.nvmlDeviceGetCpuAffinity(h, 2))
out([N.nvmlSystemGetDriverVersion(), N.nvmlDeviceGetName(h), N.nvmlDeviceGetUUID(h),
     N.nvmlDeviceGetPciInfo(h).busId, N.nvmlDeviceGetPciInfo(h).pciDeviceId, m.total, m.reserved, words])
"""
    )
    assert got == [
        "580.159.04",
        "NVIDIA H200",
        "GPU-1516ee65-a270-e62c-6570-a3f53e8f4864",
        "00000000:00:06.0",
        0x233510DE,
        143771 * MIB,
        616 * MIB,
        [0xFFFF, 0],
    ]


def test_handles_by_uuid_and_bus_id_and_bad_arguments(node):
    got = node("h100-8gpu").run(
        """
N.nvmlInit()
a = N.nvmlDeviceGetIndex(N.nvmlDeviceGetHandleByUUID("GPU-00000005-0000-0000-0000-000000000005"))
b = N.nvmlDeviceGetIndex(N.nvmlDeviceGetHandleByPciBusId("00000000:B9:00.0"))
c = N.nvmlDeviceGetIndex(N.nvmlDeviceGetHandleByPciBusId("0000:b9:00.0"))
out([a, b, c, err(N.nvmlDeviceGetHandleByUUID, "GPU-nope"), err(N.nvmlDeviceGetHandleByIndex, 8),
     err(N.nvmlDeviceGetBrand, N.nvmlDeviceGetHandleByIndex(0))])
"""
    )
    assert got == [5, 6, 6, "NVMLError_NotFound", "NVMLError_InvalidArgument", "NVMLError_FunctionNotFound"]


def test_calls_before_init_are_uninitialized(node):
    assert node().run("out(err(N.nvmlDeviceGetCount))") == "NVMLError_Uninitialized"


def test_energy_counter_advances_at_the_recorded_power(node):
    got = node("h100-8gpu").run(
        """
import time
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(0)
t0, e0 = time.time(), N.nvmlDeviceGetTotalEnergyConsumption(h)
time.sleep(0.5)
t1, e1 = time.time(), N.nvmlDeviceGetTotalEnergyConsumption(h)
out([e1 - e0, t1 - t0])
"""
    )
    delta_mj, seconds = got
    # GPU0 average_power_draw 68.57 W -> 68.57 mJ per ms; millisecond clock granularity either side
    assert 68.57 * (seconds * 1000 - 3) <= delta_mj <= 68.57 * (seconds * 1000 + 3)


def test_exports_only_the_declared_api(node, standin_lib):
    # in a subprocess: loading the soname into the test process would shadow "no library" elsewhere
    got = node().run(
        f"""
import ctypes
lib = ctypes.CDLL({str(standin_lib / "libnvidia-ml.so.1")!r})
names = ["nvmlInitWithFlags", "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetComputeRunningProcesses_v3",
         "nvmlDeviceGetGpuInstanceProfileInfoV", "nvmlComputeInstanceGetInfo_v2", "state_load", "switch_on", "N"]
out({{n: hasattr(lib, n) for n in names}})
"""
    )
    assert got == {
        "nvmlInitWithFlags": True,
        "nvmlDeviceGetPciInfo_v3": True,
        "nvmlDeviceGetComputeRunningProcesses_v3": True,
        "nvmlDeviceGetGpuInstanceProfileInfoV": True,
        "nvmlComputeInstanceGetInfo_v2": True,
        "state_load": False,
        "switch_on": False,
        "N": False,
    }
    assert re.fullmatch(r"[0-9a-f]{16}", standin_lib.name)  # cache dir keyed by the source hash
