# SPDX-License-Identifier: Apache-2.0
"""State kept across calls and processes in the state file; a corrupt file is an NVML error, not a crash."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

SET_MODES = """
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(2)
N.nvmlDeviceSetComputeMode(h, N.NVML_COMPUTEMODE_EXCLUSIVE_PROCESS)
N.nvmlDeviceSetAccountingMode(h, N.NVML_FEATURE_ENABLED)
out("ok")
"""


def test_compute_and_accounting_mode_persist_across_processes(node):
    n = node("h100-8gpu")
    assert n.run(SET_MODES) == "ok"
    got = n.run(
        """
N.nvmlInit()
out([[N.nvmlDeviceGetComputeMode(h), N.nvmlDeviceGetAccountingMode(h)]
     for h in map(N.nvmlDeviceGetHandleByIndex, range(4))])
"""
    )
    assert got == [[0, 0], [0, 0], [3, 1], [0, 0]]
    gpu2 = n.read()["gpus"][2]
    assert (gpu2["compute_mode"], gpu2["accounting"]) == ("3", "1")
    assert "# from:" not in n.path.read_text()  # rewritten by the library (write-through), not by the test
    assert not list(n.path.parent.glob("node.state.tmp.*"))  # atomic rename left no temporary behind
    assert n.run("N.nvmlInit(); out(err(N.nvmlDeviceSetComputeMode, N.nvmlDeviceGetHandleByIndex(0), 1))") == (
        "NVMLError_InvalidArgument"  # EXCLUSIVE_THREAD was removed from NVML
    )


@pytest.fixture
def sleeper():
    p = subprocess.Popen(["sleep", "60"])
    yield p
    p.kill()
    p.wait()


def test_running_processes_are_the_recorded_pids_still_alive(node, sleeper):
    def edit(data):
        data["gpus"][1]["processes"] = [{"pid": sleeper.pid, "used_mib": 1234}]

    n = node("h100-8gpu", edit=edit)
    code = """
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(1)
out([[p.pid, p.usedGpuMemory] for p in N.nvmlDeviceGetComputeRunningProcesses(h)]
    + [len(N.nvmlDeviceGetComputeRunningProcesses(N.nvmlDeviceGetHandleByIndex(0)))])
"""
    assert n.run(code) == [[sleeper.pid, 1234 * 2**20], 0]
    sleeper.kill()
    sleeper.wait()
    assert n.run(code) == [0]  # a killed leftover disappears, as on a GPU


def test_accounting_pids_and_stats(node, sleeper):
    # an accounted process that has ended: a child of ours, reaped (a fixed number such as 4242 can be a
    # live process in a fresh PID namespace, as in .ci/in-root's roots)
    done = subprocess.Popen(["true"])
    done.wait()
    gone = done.pid

    def edit(data):
        data["gpus"][0]["accounting"] = 1
        data["gpus"][0]["accounted"] = [
            {"pid": gone, "gpu_util": 87, "mem_util": 40, "max_mem_mib": 30000, "time_ms": 5000, "start_us": 17},
            {"pid": sleeper.pid, "gpu_util": 5, "mem_util": 1, "max_mem_mib": 10, "time_ms": 0, "start_us": 18},
        ]

    n = node("h100-8gpu", edit=edit)
    code = """
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(0)
rows = []
for pid in N.nvmlDeviceGetAccountingPids(h):
    s = N.nvmlDeviceGetAccountingStats(h, pid)
    rows.append([pid, s.gpuUtilization, s.memoryUtilization, s.maxMemoryUsage, s.time, s.isRunning])
h1 = N.nvmlDeviceGetHandleByIndex(1)
out([rows, err(N.nvmlDeviceGetAccountingStats, h, 1), err(N.nvmlDeviceGetAccountingPids, h1)])
"""
    assert n.run(code) == [
        [[gone, 87, 40, 30000 * 2**20, 5000, 0], [sleeper.pid, 5, 1, 10 * 2**20, 0, 1]],
        "NVMLError_NotFound",
        "NVMLError_NotSupported",  # accounting mode disabled on GPU1
    ]
    assert n.run("N.nvmlInit(); N.nvmlDeviceClearAccountingPids(N.nvmlDeviceGetHandleByIndex(0)); out(1)") == 1
    assert n.run("N.nvmlInit(); out(N.nvmlDeviceGetAccountingPids(N.nvmlDeviceGetHandleByIndex(0)))") == []


def test_health_counters_come_from_the_state(node):
    def edit(data):
        g = data["gpus"][4]
        g.update(ecc_volatile_uncorrected=2, remapped_rows=[1, 3, 1, 0])
        g["retired_pages"] = {"sbe": [0x1000], "dbe": [0x2000, 0x3000], "pending": 1}

    got = node("h100-8gpu", edit=edit).run(
        """
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(4)
out([N.nvmlDeviceGetTotalEccErrors(h, N.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, N.NVML_VOLATILE_ECC),
     N.nvmlDeviceGetMemoryErrorCounter(h, 1, 0, N.NVML_MEMORY_LOCATION_DRAM),
     N.nvmlDeviceGetMemoryErrorCounter(h, 1, 0, N.NVML_MEMORY_LOCATION_L2_CACHE),
     list(N.nvmlDeviceGetRemappedRows(h)), N.nvmlDeviceGetRetiredPages(h, 1),
     [p["address"] for p in N.nvmlDeviceGetRetiredPages_v2(h, 0)], N.nvmlDeviceGetRetiredPagesPendingStatus(h)])
"""
    )
    assert got == [2, 2, 0, [1, 3, 1, 0], [0x2000, 0x3000], [0x1000], 1]


CORRUPTIONS = {
    "garbage": b"\x89PNG\r\n\x1a\n not a state file",
    "empty": b"",
    "no-format-line": b"gpus=0\nend=1\n",
    "unknown-key": b"format=1\ndriver_version=1\nfrobnicate=1\ngpus=0\nend=1\n",
    "bad-number": b"format=1\ngpus=0x\nend=1\n",
    "gpu-index-out-of-range": b"format=1\ngpus=1\ngpu.3.name=x\nend=1\n",
    "gpu-without-uuid": b"format=1\ngpus=1\ngpu.0.name=x\ngpu.0.bus_id=00000000:01:00.0\nend=1\n",
    "nul-byte": b"format=1\ngpus=0\x00\nend=1\n",
    "too-many-gpus": b"format=1\ngpus=17\nend=1\n",
    "data-after-end": b"format=1\ngpus=0\nend=1\ngpus=1\n",
    "bad-mig-uuid": b"format=1\ngpus=1\ngpu.0.name=x\ngpu.0.uuid=GPU-1\ngpu.0.bus_id=00000000:01:00.0\n"
    b"gpu.0.gi.1=2:0\ngpu.0.ci.1.0=2:GPU-x\nend=1\n",
    "gi-of-unknown-profile": b"format=1\ngpus=1\ngpu.0.name=x\ngpu.0.uuid=GPU-1\ngpu.0.bus_id=00000000:01:00.0\n"
    b"gpu.0.gi.1=2:0\nend=1\n",
    "ci-without-gi": b"format=1\nprofile.2=9:3g.40gb:3:2:60:3:3:0:3:0:40448:4:0/4\ngpus=1\ngpu.0.name=x\n"
    b"gpu.0.uuid=GPU-1\ngpu.0.bus_id=00000000:01:00.0\ngpu.0.ci.1.0=2:MIG-x\nend=1\n",
    "placement-past-the-end": b"format=1\nprofile.2=9:3g.40gb:3:2:60:3:3:0:3:0:40448:4:0/6\ngpus=0\nend=1\n",
}


@pytest.mark.parametrize("content", CORRUPTIONS.values(), ids=CORRUPTIONS.keys())
def test_corrupt_state_file_is_an_nvml_error(node, content):
    n = node("h100-8gpu")
    n.path.write_bytes(content)
    r = n.proc("out(err(N.nvmlInit))")
    assert r.returncode == 0, r.stderr  # no crash, no signal
    assert r.stdout.strip() == '"NVMLError_Unknown"'


def test_half_written_state_file_is_an_nvml_error(node):
    n = node("h100-8gpu")
    full = n.path.read_bytes()
    n.path.write_bytes(full[: len(full) // 2])  # the end=1 line is missing
    assert n.run("out(err(N.nvmlInit))") == "NVMLError_Unknown"


def test_state_corrupted_mid_session_fails_the_next_call(node):
    n = node("h100-8gpu")
    got = n.run(
        f"""
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(0)
open({str(n.path)!r}, "w").write("format=1\\ngpus=zz\\n")
out([err(N.nvmlDeviceGetName, h), err(N.nvmlDeviceSetComputeMode, h, 0)])
"""
    )
    assert got == ["NVMLError_Unknown", "NVMLError_Unknown"]


def test_concurrent_writers_lose_no_update(node):
    """Seven processes each create one 1g.10gb instance on GPU0 at once: the flock serialises them."""

    def edit(data):
        data["gpus"][0]["mig_current"] = data["gpus"][0]["mig_pending"] = 1

    n = node("h100-8gpu", edit=edit)
    code = """
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(0)
N.nvmlDeviceCreateGpuInstance(h, N.nvmlDeviceGetGpuInstanceProfileInfo(h, 0).id)
out(1)
"""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", "import json\nimport pynvml as N\nout=print\n" + code],
            env=n.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(7)
    ]
    deadline = time.monotonic() + 30
    for p in procs:
        out, errs = p.communicate(timeout=max(1, deadline - time.monotonic()))
        assert p.returncode == 0, errs
    gis = {k: v for k, v in n.read()["gpus"][0].items() if k.startswith("gi.")}
    # the driver's ids of the seven 1-slice placements 0..6 are 7..13, whatever order the creates ran in
    assert gis == {f"gi.{7 + start}": f"0:{start}" for start in range(7)}
