# SPDX-License-Identifier: Apache-2.0
"""The failure switches make the real binding raise what a real driver makes it raise."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import needs_other_user


@pytest.mark.parametrize("how", ["env", "state"])
def test_driver_not_loaded(node, how):
    if how == "env":
        n = node("h100-8gpu")
        got = n.run(
            "out([err(N.nvmlInit), err(N.nvmlDeviceGetCount)])", SLURM_GPU_NVML_STANDIN_FAIL="driver_not_loaded"
        )
    else:
        got = node("h100-8gpu", fail=("driver_not_loaded",)).run("out([err(N.nvmlInit), err(N.nvmlDeviceGetCount)])")
    assert got == ["NVMLError_DriverNotLoaded", "NVMLError_Uninitialized"]


def test_no_node_served_is_a_host_without_driver(node, tmp_path):
    n = node("h100-8gpu")
    assert n.run("out(err(N.nvmlInit))", SLURM_GPU_NVML_STANDIN=str(tmp_path / "absent.state")) == (
        "NVMLError_DriverNotLoaded"
    )
    assert n.run("out(err(N.nvmlInit))", SLURM_GPU_NVML_STANDIN="") == "NVMLError_DriverNotLoaded"


def test_per_node_state_directory(node, tmp_path):
    n = node("h100-8gpu")
    (tmp_path / "h100n2.state").write_text(n.path.read_text())
    got = n.run(
        "N.nvmlInit(); out(N.nvmlDeviceGetCount())",
        SLURM_GPU_NVML_STANDIN="",
        SLURM_GPU_NVML_STANDIN_DIR=str(tmp_path),
        SLURMD_NODENAME="h100n2",
    )
    assert got == 8


SETTERS = """
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(0)
out([err(N.nvmlDeviceSetComputeMode, h, 3), err(N.nvmlDeviceSetAccountingMode, h, 1),
     err(N.nvmlDeviceSetMigMode, h, 1), err(N.nvmlDeviceClearAccountingPids, h),
     N.nvmlDeviceGetComputeMode(h), N.nvmlDeviceGetMigMode(h)])
"""


def test_no_permission_on_every_setter(node):
    n = node("h100-8gpu", fail=("no_permission",))
    before = n.path.read_text()
    assert n.run(SETTERS) == ["NVMLError_NoPermission"] * 4 + [0, [0, 0]]
    assert n.path.read_text() == before  # nothing written


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the probe as an unprivileged user")
def test_root_only_refuses_setters_to_other_users(node, standin_lib):
    # the probe runs as nobody, with the pynvml of this environment
    needs_other_user("nobody", "/usr/bin/python3", f"import sys; sys.path.insert(0, {pynvml_dir()!r}); import pynvml")
    shared = Path(tempfile.mkdtemp(prefix="nvml-standin-"))  # tmp_path is 0700: the user could not read it
    try:
        os.chmod(shared, 0o777)
        n = node("h100-8gpu", root_only=True)
        path = shared / "node.state"
        path.write_text(n.path.read_text())
        os.chmod(path, 0o644)
        env = n.env(SLURM_GPU_NVML_STANDIN=str(path))
        code = (
            "import pynvml as N\nN.nvmlInit()\ntry:\n N.nvmlDeviceSetComputeMode(N.nvmlDeviceGetHandleByIndex(0), 3)\n"
            " print('set')\nexcept N.NVMLError as e:\n print(type(e).__name__)\n"
        )
        r = subprocess.run(
            ["/usr/bin/python3", "-c", f"import sys; sys.path.insert(0, {pynvml_dir()!r})\n" + code],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            user="nobody",
            check=False,
        )
        assert r.stdout.strip() == "NVMLError_NoPermission", r.stderr
        assert "gpu.0.compute_mode=0" in path.read_text()
        as_root = "N.nvmlInit(); N.nvmlDeviceSetComputeMode(N.nvmlDeviceGetHandleByIndex(0), 3); out(1)"
        assert n.run(as_root, SLURM_GPU_NVML_STANDIN=str(path)) == 1
        assert "gpu.0.compute_mode=3" in path.read_text()
    finally:
        for f in shared.iterdir():
            f.unlink()
        shared.rmdir()


def pynvml_dir() -> str:
    import pynvml

    return str(Path(pynvml.__file__).parent)


def test_gpu_busy_on_mig_enable_leaves_it_pending(node):
    n = node("h100-8gpu", fail=("gpu_busy",))
    got = n.run(
        """
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(0)
out([N.nvmlDeviceSetMigMode(h, 1), N.nvmlDeviceGetMigMode(h)])
"""
    )
    assert got == [19, [0, 1]]  # NVML_ERROR_IN_USE as the activation status, not an exception (pynvml quirk)


def test_a_live_process_makes_the_gpu_busy_too(node):
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        n = node("h100-8gpu", edit=lambda d: d["gpus"][3].update(processes=[{"pid": sleeper.pid, "used_mib": 10}]))
        code = (
            "N.nvmlInit(); h = N.nvmlDeviceGetHandleByIndex(3)\n"
            "out([N.nvmlDeviceSetMigMode(h, 1), N.nvmlDeviceGetMigMode(h)])"
        )
        assert n.run(code) == [19, [0, 1]]
        sleeper.kill()
        sleeper.wait()
        assert n.run(code) == [0, [1, 1]]
    finally:
        sleeper.kill()
        sleeper.wait()


def test_hanging_call_is_bounded_by_the_caller(node):
    n = node("h100-8gpu", hang="nvmlDeviceGetCount_v2")
    t0 = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        n.proc("N.nvmlInit(); out(N.nvmlDeviceGetCount())", timeout=2)
    assert time.monotonic() - t0 < 10
    assert n.run("N.nvmlInit(); out(N.nvmlSystemGetDriverVersion())", timeout=10) == "580.105.08"  # others answer


def test_hang_for_n_seconds_then_answer(node):
    n = node("h100-8gpu")
    t0 = time.monotonic()
    got = n.run(
        "N.nvmlInit(); out(N.nvmlDeviceGetCount())", timeout=20, SLURM_GPU_NVML_STANDIN_HANG="nvmlDeviceGetCount_v2:1"
    )
    assert got == 8 and time.monotonic() - t0 >= 1


def test_hang_in_init_and_everywhere(node):
    n = node("h100-8gpu")
    for spec in ("nvmlInitWithFlags", "*"):
        with pytest.raises(subprocess.TimeoutExpired):
            n.proc("N.nvmlInit(); out(1)", timeout=2, SLURM_GPU_NVML_STANDIN_HANG=spec)


def test_gpu_fallen_off_the_bus(node):
    got = node("h100-8gpu", edit=lambda d: d["gpus"][6].update(lost=1)).run(
        """
N.nvmlInit()
out([N.nvmlDeviceGetCount(), err(N.nvmlDeviceGetHandleByIndex, 6),
     err(N.nvmlDeviceGetHandleByUUID, "GPU-00000006-0000-0000-0000-000000000006"),
     N.nvmlDeviceGetName(N.nvmlDeviceGetHandleByIndex(5))])
"""
    )
    assert got == [8, "NVMLError_GpuIsLost", "NVMLError_GpuIsLost", "NVIDIA H100 80GB HBM3"]
