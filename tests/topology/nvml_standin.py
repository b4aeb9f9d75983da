# SPDX-License-Identifier: Apache-2.0
"""A stand-in ``libnvidia-ml.so.1`` for the REAL nvidia-ml-py binding (pynvml is not mocked).

``StandInNvml(machine)`` exposes ctypes callbacks under the C symbol names pynvml resolves
(``nvmlDeviceGetCount_v2``, ``nvmlDeviceGetPciInfo_v3``, ``nvmlDeviceGetNvLinkRemotePciInfo_v2`` ...);
it is installed as ``pynvml.nvmlLib``, so pynvml's own ctypes marshalling, struct layouts and
error-code -> exception mapping all run. Pointer parameters are ``c_void_p`` and cast inside (a
``c_char_p`` parameter would hand the callback a copy). Symbols not served raise
``NVMLError_FunctionNotFound`` in pynvml, as with an old driver.

The machine is a ``RecordedMachine``: answers recorded from a real node (see test_live.py, which
extracts them from the DGX-2H hwloc XML, itself produced from NVML).
"""

from __future__ import annotations

import ctypes
from ctypes import CFUNCTYPE, POINTER, c_int, c_uint, c_ulonglong, c_void_p, cast
from dataclasses import dataclass, field

SUCCESS, INVALID_ARGUMENT, NOT_SUPPORTED, DRIVER_NOT_LOADED = 0, 2, 3, 9


@dataclass
class RecordedGpu:
    bus_id: str  # NVML spelling, 00000000:34:00.0
    uuid: str
    name: str
    minor: int
    memory_bytes: int
    cpu_words: list[int]  # nvmlDeviceGetCpuAffinity 64-bit words
    nvlink_remote_bus_ids: list[str]  # one per active lane
    nvlink_lanes: int  # lanes the GPU has (beyond: INVALID_ARGUMENT)
    mig: tuple[int, int] | None = None  # (current, pending); None = NOT_SUPPORTED


@dataclass
class RecordedMachine:
    gpus: list[RecordedGpu]
    driver_version: str = "450.51.06"
    init_error: int = SUCCESS
    calls: list[str] = field(default_factory=list)


class StandInNvml:
    def __init__(self, machine: RecordedMachine):
        self.m = machine
        self._keep: list[object] = []
        self._errbuf = {}
        import pynvml

        def sym(name: str, restype, *argtypes):
            def deco(fn):
                def logged(*args):
                    machine.calls.append(name)
                    return fn(*args)

                cb = CFUNCTYPE(restype, *argtypes)(logged)
                self._keep.append(cb)
                setattr(self, name, cb)
                return fn

            return deco

        def gpu(handle) -> RecordedGpu | None:
            i = (handle or 0) - 1
            return machine.gpus[i] if 0 <= i < len(machine.gpus) else None

        def put_str(ptr, size, text: str) -> int:
            data = text.encode() + b"\0"
            if len(data) > size:
                return 7  # NVML_ERROR_INSUFFICIENT_SIZE
            ctypes.memmove(ptr, data, len(data))
            return SUCCESS

        @sym("nvmlInitWithFlags", c_int, c_uint)
        def _init(flags):
            return machine.init_error

        @sym("nvmlShutdown", c_int)
        def _shutdown():
            return SUCCESS

        @sym("nvmlErrorString", c_void_p, c_int)
        def _err(code):
            if code not in self._errbuf:
                self._errbuf[code] = ctypes.create_string_buffer(f"stand-in NVML error {code}".encode())
            return ctypes.addressof(self._errbuf[code])

        @sym("nvmlSystemGetDriverVersion", c_int, c_void_p, c_uint)
        def _driver(buf, size):
            return put_str(buf, size, machine.driver_version)

        @sym("nvmlDeviceGetCount_v2", c_int, c_void_p)
        def _count(out):
            cast(out, POINTER(c_uint))[0] = len(machine.gpus)
            return SUCCESS

        @sym("nvmlDeviceGetHandleByIndex_v2", c_int, c_uint, c_void_p)
        def _handle(index, out):
            if index >= len(machine.gpus):
                return INVALID_ARGUMENT
            cast(out, POINTER(c_void_p))[0] = index + 1
            return SUCCESS

        @sym("nvmlDeviceGetPciInfo_v3", c_int, c_void_p, c_void_p)
        def _pci(handle, out):
            g = gpu(handle)
            if g is None:
                return INVALID_ARGUMENT
            info = cast(out, POINTER(pynvml.nvmlPciInfo_t)).contents
            info.busId = g.bus_id.encode()
            info.busIdLegacy = g.bus_id[4:].encode()
            dom, bus, rest = g.bus_id.split(":")
            info.domain, info.bus, info.device = int(dom, 16), int(bus, 16), int(rest.split(".")[0], 16)
            return SUCCESS

        @sym("nvmlDeviceGetName", c_int, c_void_p, c_void_p, c_uint)
        def _name(handle, buf, size):
            g = gpu(handle)
            return INVALID_ARGUMENT if g is None else put_str(buf, size, g.name)

        @sym("nvmlDeviceGetUUID", c_int, c_void_p, c_void_p, c_uint)
        def _uuid(handle, buf, size):
            g = gpu(handle)
            return INVALID_ARGUMENT if g is None else put_str(buf, size, g.uuid)

        @sym("nvmlDeviceGetMinorNumber", c_int, c_void_p, c_void_p)
        def _minor(handle, out):
            g = gpu(handle)
            if g is None:
                return INVALID_ARGUMENT
            cast(out, POINTER(c_uint))[0] = g.minor
            return SUCCESS

        @sym("nvmlDeviceGetMemoryInfo", c_int, c_void_p, c_void_p)
        def _mem(handle, out):
            g = gpu(handle)
            if g is None:
                return INVALID_ARGUMENT
            mem = cast(out, POINTER(pynvml.c_nvmlMemory_t)).contents
            mem.total, mem.free, mem.used = g.memory_bytes, g.memory_bytes, 0
            return SUCCESS

        @sym("nvmlDeviceGetCpuAffinity", c_int, c_void_p, c_uint, c_void_p)
        def _affinity(handle, n_words, out):
            g = gpu(handle)
            if g is None:
                return INVALID_ARGUMENT
            words = cast(out, POINTER(c_ulonglong * n_words)).contents
            for i in range(n_words):
                words[i] = g.cpu_words[i] if i < len(g.cpu_words) else 0
            return SUCCESS

        @sym("nvmlDeviceGetMigMode", c_int, c_void_p, c_void_p, c_void_p)
        def _mig(handle, cur, pending):
            g = gpu(handle)
            if g is None:
                return INVALID_ARGUMENT
            if g.mig is None:
                return NOT_SUPPORTED
            cast(cur, POINTER(c_uint))[0], cast(pending, POINTER(c_uint))[0] = g.mig
            return SUCCESS

        @sym("nvmlDeviceGetNvLinkState", c_int, c_void_p, c_uint, c_void_p)
        def _nvlink_state(handle, lane, out):
            g = gpu(handle)
            if g is None or lane >= g.nvlink_lanes:
                return INVALID_ARGUMENT if g is not None and g.nvlink_lanes else NOT_SUPPORTED
            cast(out, POINTER(c_uint))[0] = 1 if lane < len(g.nvlink_remote_bus_ids) else 0
            return SUCCESS

        @sym("nvmlDeviceGetNvLinkRemotePciInfo_v2", c_int, c_void_p, c_uint, c_void_p)
        def _nvlink_remote(handle, lane, out):
            g = gpu(handle)
            if g is None or lane >= len(g.nvlink_remote_bus_ids):
                return INVALID_ARGUMENT
            info = cast(out, POINTER(pynvml.nvmlPciInfo_t)).contents
            info.busId = g.nvlink_remote_bus_ids[lane].encode()
            return SUCCESS


def install(machine: RecordedMachine | None):
    """Make the real pynvml use the stand-in (``None``: no library at all). Returns pynvml."""
    import pynvml

    pynvml._nvmlGetFunctionPointer_cache.clear()
    pynvml._nvmlLib_refcount = 0
    pynvml.nvmlLib = StandInNvml(machine) if machine is not None else None
    return pynvml


def uninstall() -> None:
    import pynvml

    pynvml._nvmlGetFunctionPointer_cache.clear()
    pynvml._nvmlLib_refcount = 0
    pynvml.nvmlLib = None
