# SPDX-License-Identifier: Apache-2.0
"""A job's per-GPU statistics, pure: NVML accounting samples and the energy counter -> one JSON-lines
record per GPU, and the Prometheus textfile-collector text for it.

Accounting is per process (``nvmlDeviceGetAccountingStats``): utilisation is the time-weighted mean of
the processes' ``gpuUtilization`` and peak memory the largest ``maxMemoryUsage``. The prolog clears the
GPU's accounting buffer, so every process in it belongs to the job (whole GPUs are not shared).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a hook starts for every job)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import TypedDict

    from slurm_gpu.jsontypes import JsonObject, JsonValue

    class GpuSummary(TypedDict):
        """The per-GPU figures of :func:`summarise`."""

        processes: int
        gpu_util_pct: float | None
        mem_util_pct: float | None
        max_memory_bytes: int | None

    class GpuRecord(GpuSummary):
        """One JSON-lines record of :func:`record`: one GPU of one job (docs/hooks.md)."""

        job_id: int
        uid: int | None
        node: str
        gpu_index: JsonValue
        gpu_uuid: JsonValue
        pci_bus_id: JsonValue
        start: float | None
        end: float
        energy_j: float | None


class Sample:
    """One accounted process: utilisation (%), peak memory (bytes), run time (ms)."""

    __slots__ = ("pid", "gpu_util", "mem_util", "max_mem_bytes", "time_ms")

    def __init__(self, pid: int, gpu_util: int, mem_util: int, max_mem_bytes: int, time_ms: int) -> None:
        self.pid, self.gpu_util, self.mem_util = pid, gpu_util, mem_util
        self.max_mem_bytes, self.time_ms = max_mem_bytes, time_ms


def summarise(samples: Iterable[Sample]) -> GpuSummary:
    """Per-GPU figures from the accounted processes (None where nothing was accounted)."""
    rows = list(samples)
    if not rows:
        return {"processes": 0, "gpu_util_pct": None, "mem_util_pct": None, "max_memory_bytes": None}
    weight = sum(max(r.time_ms, 0) for r in rows)

    def mean(attr: str) -> float:
        values = [float(getattr(r, attr)) for r in rows]
        if weight <= 0:
            return round(sum(values) / len(rows), 1)
        return round(sum(v * max(r.time_ms, 0) for v, r in zip(values, rows, strict=True)) / weight, 1)

    return {"processes": len(rows), "gpu_util_pct": mean("gpu_util"), "mem_util_pct": mean("mem_util"),
            "max_memory_bytes": max(r.max_mem_bytes for r in rows)}


def energy_j(start_mj: int | None, end_mj: int | None) -> float | None:
    """Joules used between the prolog's and the epilog's counter readings (None: unknown or wrapped)."""
    if start_mj is None or end_mj is None or end_mj < start_mj:
        return None
    return round((end_mj - start_mj) / 1000.0, 3)


def record(job_id: int, uid: int | None, node: str, gpu: JsonObject, summary: GpuSummary,
           energy: float | None, start_s: float | None, end_s: float) -> GpuRecord:
    """One JSON-lines record (one GPU of one job)."""
    return {"job_id": job_id, "uid": uid, "node": node, "gpu_index": gpu.get("index"),
            "gpu_uuid": gpu.get("uuid") or None, "pci_bus_id": gpu.get("bus_id") or None,
            "start": None if start_s is None else round(start_s, 3), "end": round(end_s, 3),
            "energy_j": energy, **summary}


def _label(text: object) -> str:
    return str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def prom_text(rec: GpuRecord) -> str:
    """Prometheus text exposition of one GPU's last job (gauges labelled gpu, uuid, jobid)."""
    labels = f'gpu="{_label(rec.get("gpu_index"))}",uuid="{_label(rec.get("gpu_uuid") or "")}",' \
             f'jobid="{_label(rec["job_id"])}"'
    metrics = [
        ("slurm_gpu_job_energy_joules", "Energy the GPU used during the job.", rec.get("energy_j")),
        ("slurm_gpu_job_utilization_ratio", "Time-weighted GPU utilisation of the job's processes (0-1).",
         None if (util := rec.get("gpu_util_pct")) is None else round(float(util) / 100.0, 4)),
        ("slurm_gpu_job_max_memory_bytes", "Peak GPU memory of the job's processes.", rec.get("max_memory_bytes")),
        ("slurm_gpu_job_end_timestamp_seconds", "When the job's epilog ran.", rec.get("end")),
    ]
    lines = []
    for name, help_text, value in metrics:
        if value is None:
            continue
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", f"{name}{{{labels}}} {value}"]
    return "\n".join(lines) + "\n"


def jobmap_text(job_id: int) -> str:
    """dcgm-exporter's HPC job-mapping file content: the job id(s) on the GPU, one per line."""
    return f"{job_id}\n"
