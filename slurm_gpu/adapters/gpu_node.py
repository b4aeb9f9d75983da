# SPDX-License-Identifier: Apache-2.0
"""The node's GPUs for the Prolog/Epilog, through NVML (nvidia-ml-py, imported only when a job has GPUs).

``NvmlNode`` implements the ``GpuNode`` protocol (slurm_gpu/node/model.py) the hook steps use. NVML's answers
are mapped onto the hooks' three outcomes (slurm_gpu/node/model.py): a value; ``GpuLost`` (a
``HealthFailure``: the GPU fell off the bus, ``NVML_ERROR_GPU_IS_LOST``); ``Unavailable`` for everything that is not the
hardware's fault (library missing, driver not loaded, no permission, corrupt answers). "Not supported"
reads give None. ``bounded`` puts a time limit on a call that may hang in the driver, ``run_tool`` on a
tool (nvidia-smi, nvidia-cuda-mps-control), for the operations NVML lacks.
"""

from __future__ import annotations

import os

from slurm_gpu.node.health import Reading
from slurm_gpu.node.model import GpuId, HealthFailure, MigDevice, Unavailable
from slurm_gpu.node.stats import Sample

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a hook starts for every job)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, TypeVar

    T = TypeVar("T")


class GpuLost(HealthFailure):
    pass


def bounded(fn: Callable[[], T], timeout_s: float, what: str) -> T:
    """``fn()`` in a helper thread; ``Unavailable`` when it has not returned within ``timeout_s`` (the
    thread is left behind: a call stuck in the driver cannot be cancelled; the hook exits soon after)."""
    import threading

    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread
            box["error"] = exc

    t = threading.Thread(target=work, name=f"bounded:{what}", daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        raise Unavailable(f"{what} did not answer within {timeout_s:g} s")
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


def run_tool(argv: Sequence[str], timeout_s: float, env: Mapping[str, str] | None = None,
             stdin: str = "") -> tuple[int, str, str]:
    """A tool with a hard time limit (its whole process group is killed on expiry). Unavailable when it
    cannot be started or runs over; otherwise (exit status, stdout, stderr)."""
    import signal
    import subprocess

    try:
        proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=None if env is None else dict(env), text=True, start_new_session=True)
    except OSError as exc:
        raise Unavailable(f"{argv[0]}: {exc.strerror or exc}") from None
    try:
        out, err = proc.communicate(stdin, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.communicate()
        raise Unavailable(f"{argv[0]} did not finish within {timeout_s:g} s; killed") from None
    return proc.returncode, out[:65536], err[:65536]


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def import_pynvml() -> Any:
    """``import pynvml`` (nvidia-ml-py), without the cost of ``ctypes.util`` where nothing needs it.

    The binding imports ``find_library`` from ``ctypes.util`` at load and calls it only on Windows;
    importing ``ctypes.util`` pulls in shutil, subprocess, tempfile and re: 6-10 ms of every hook run
    (benchmarks/bench_hooks.py profile). While the binding loads, ``ctypes.util`` is a stand-in whose
    ``find_library`` imports the real module on first use; the stand-in is taken out again at once, so
    nothing else ever sees it. The binding itself runs unchanged."""
    import sys

    if "pynvml" in sys.modules or "ctypes.util" in sys.modules:
        import pynvml

        return pynvml
    import ctypes

    def find_library(name: str) -> str | None:
        sys.modules.pop("ctypes.util", None)
        import ctypes.util as real

        return real.find_library(name)

    stand_in = type(sys)("ctypes.util")
    stand_in.find_library = find_library  # type: ignore[attr-defined]
    sys.modules["ctypes.util"] = stand_in
    try:
        import pynvml
    finally:
        if sys.modules.get("ctypes.util") is stand_in:
            del sys.modules["ctypes.util"]
        if getattr(ctypes, "util", None) is stand_in:
            del ctypes.util
    return pynvml


class NvmlNode:
    """NVML, initialised for one hook run. Raises ``Unavailable`` when NVML cannot be used at all."""

    def __init__(self) -> None:
        try:
            pynvml = import_pynvml()
        except ImportError:
            raise Unavailable("nvidia-ml-py (pynvml) is not installed") from None
        self.N = pynvml
        self.lost: set[int] = set()
        self._handles: dict[int, Any] = {}
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise Unavailable(f"NVML: {exc}") from None

    def _call(self, label: str, fn: Callable[..., Any], *args: Any, optional: bool = False) -> Any:
        N = self.N
        try:
            return fn(*args)
        except N.NVMLError_GpuIsLost:
            raise GpuLost(f"{label} lost (fallen off the bus / NVML GPU_IS_LOST)") from None
        except (N.NVMLError_NotSupported, N.NVMLError_FunctionNotFound, N.NVMLLibraryMismatchError):
            if optional:
                return None
            raise Unavailable(f"{label}: {getattr(fn, '__name__', 'NVML')}: not supported") from None
        except N.NVMLError as exc:
            raise Unavailable(f"{label}: {getattr(fn, '__name__', 'NVML')}: {exc}") from None

    def devices(self) -> tuple[GpuId, ...]:
        N = self.N
        count = self._call("NVML", N.nvmlDeviceGetCount)
        out = []
        for i in range(int(count)):
            try:
                h = self._call(f"GPU {i}", N.nvmlDeviceGetHandleByIndex, i)
            except GpuLost:
                self.lost.add(i)
                out.append(GpuId("", i, None, "", ""))
                continue
            self._handles[i] = h
            try:
                bus = _text(self._call(f"GPU {i}", N.nvmlDeviceGetPciInfo, h).busId)
                minor = self._call(f"GPU {i}", N.nvmlDeviceGetMinorNumber, h, optional=True)
                uuid = _text(self._call(f"GPU {i}", N.nvmlDeviceGetUUID, h))
            except GpuLost:
                self.lost.add(i)
                out.append(GpuId("", i, None, "", ""))
                continue
            out.append(GpuId("", i, None if minor is None else int(minor), bus, uuid))
        return tuple(out)

    def _h(self, gpu: GpuId) -> Any:
        if gpu.index is None or gpu.index in self.lost or gpu.index not in self._handles:
            raise GpuLost(f"{gpu.label()} lost (fallen off the bus / NVML GPU_IS_LOST)")
        return self._handles[gpu.index]

    def reading(self, gpu: GpuId) -> Reading:
        N, label = self.N, gpu.label()
        try:
            h = self._h(gpu)
            ecc = self._call(label, N.nvmlDeviceGetTotalEccErrors, h, N.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                             N.NVML_VOLATILE_ECC, optional=True)
            pending = self._call(label, N.nvmlDeviceGetRetiredPagesPendingStatus, h, optional=True)
            remap = self._call(label, N.nvmlDeviceGetRemappedRows, h, optional=True)
        except GpuLost:
            return Reading(label, lost=True)
        return Reading(label, ecc_volatile_uncorrected=None if ecc is None else int(ecc),
                       retired_pending=None if pending is None else bool(pending),
                       remap_pending=None if remap is None else bool(remap[2]),
                       remap_failure=None if remap is None else bool(remap[3]))

    def compute_pids(self, gpu: GpuId) -> tuple[int, ...]:
        procs = self._call(gpu.label(), self.N.nvmlDeviceGetComputeRunningProcesses, self._h(gpu))
        return tuple(sorted({int(p.pid) for p in procs}))

    def accounting_mode(self, gpu: GpuId) -> bool | None:
        mode = self._call(gpu.label(), self.N.nvmlDeviceGetAccountingMode, self._h(gpu), optional=True)
        return None if mode is None else bool(mode)

    def set_accounting(self, gpu: GpuId, on: bool) -> None:
        N = self.N
        self._call(gpu.label(), N.nvmlDeviceSetAccountingMode, self._h(gpu),
                   N.NVML_FEATURE_ENABLED if on else N.NVML_FEATURE_DISABLED)

    def clear_accounting(self, gpu: GpuId) -> None:
        self._call(gpu.label(), self.N.nvmlDeviceClearAccountingPids, self._h(gpu))

    def samples(self, gpu: GpuId) -> list[Sample]:
        N, h, label = self.N, self._h(gpu), gpu.label()
        pids = self._call(label, N.nvmlDeviceGetAccountingPids, h, optional=True) or []
        out = []
        for pid in pids:
            s = self._call(label, N.nvmlDeviceGetAccountingStats, h, pid, optional=True)
            if s is not None:
                out.append(Sample(int(pid), int(s.gpuUtilization), int(s.memoryUtilization),
                                  int(s.maxMemoryUsage), int(s.time)))
        return out

    def energy_mj(self, gpu: GpuId) -> int | None:
        value = self._call(gpu.label(), self.N.nvmlDeviceGetTotalEnergyConsumption, self._h(gpu), optional=True)
        return None if value is None else int(value)

    def mig_enabled(self) -> tuple[int, ...]:
        """NVML indices of the GPUs whose current MIG mode is on (none where NVML cannot say)."""
        out = []
        for i, h in self._handles.items():
            try:
                mode = self._call(f"GPU {i}", self.N.nvmlDeviceGetMigMode, h, optional=True)
            except (GpuLost, Unavailable):
                continue
            if mode is not None and int(mode[0]) == 1:
                out.append(i)
        return tuple(out)

    def mig_devices(self) -> tuple[MigDevice, ...]:
        """Every MIG device of the GPUs in MIG mode (parent index, GPU- and compute-instance id, UUID), in
        NVML's MIG index order."""
        N = self.N
        out = []
        for i in self.mig_enabled():
            h = self._handles[i]
            count = self._call(f"GPU {i}", N.nvmlDeviceGetMaxMigDeviceCount, h, optional=True) or 0
            for k in range(int(count)):
                try:
                    m = N.nvmlDeviceGetMigDeviceHandleByIndex(h, k)
                except N.NVMLError:  # an empty slot (NOT_FOUND)
                    continue
                out.append(MigDevice(i, int(self._call(f"GPU {i}", N.nvmlDeviceGetGpuInstanceId, m)),
                                     int(self._call(f"GPU {i}", N.nvmlDeviceGetComputeInstanceId, m)),
                                     _text(self._call(f"GPU {i}", N.nvmlDeviceGetUUID, m))))
        return tuple(out)

    def close(self) -> None:
        try:
            self.N.nvmlShutdown()
        except self.N.NVMLError:
            pass
