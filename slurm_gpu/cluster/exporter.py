# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu exporter``: the cluster view and the hooks' per-GPU job records as Prometheus text for
node_exporter's textfile collector, pure (docs/report.md "Prometheus").

Conventions: every name starts with ``slurm_gpu_``; base units (bytes, seconds, joules); ratios in 0..1
(``_ratio``); counters end in ``_total``; no timestamps. Job series carry ``jobid`` (the Slurm job id,
as dcgm-exporter's ``hpc_job`` label holds it: join with ``label_replace``), ``node`` and ``gpu`` (index).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from slurm_gpu.jsontypes import JsonValue, json_object

MAX_JOB_RECORDS = 20_000  # GPU records exported (the most recent ones)


def _esc(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(labels: Mapping[str, object]) -> str:
    return "{" + ",".join(f'{k}="{_esc(v)}"' for k, v in labels.items()) + "}" if labels else ""


def _value(v: float | int) -> str:
    if isinstance(v, bool):
        v = int(v)
    if isinstance(v, int):
        return str(v)
    return repr(float(v)) if math.isfinite(v) else ("NaN" if v != v else ("+Inf" if v > 0 else "-Inf"))


class _Text:
    def __init__(self) -> None:
        self.families: dict[str, tuple[str, str, list[str]]] = {}

    def add(self, name: str, kind: str, help_text: str, labels: Mapping[str, object],
            value: float | int | None) -> None:
        if value is None:
            return
        fam = self.families.setdefault(name, (kind, help_text, []))
        fam[2].append(f"{name}{_labels(labels)} {_value(value)}")

    def text(self) -> str:
        out: list[str] = []
        for name, (kind, help_text, samples) in self.families.items():
            out += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *samples]
        return "\n".join(out) + "\n" if out else ""




def cluster_metrics(summary: Mapping[str, JsonValue], t: _Text | None = None) -> _Text:
    """The cluster view's ``--json`` document (docs/cluster.md) -> gauges per GRES key. A member that is
    missing, or not a number where a number belongs, gives no sample."""
    t = t or _Text()
    nodes = json_object(summary.get("nodes"))
    for state in ("total", "unavailable", "planned"):
        t.add("slurm_gpu_nodes", "gauge", "Nodes of the cluster view, by state (total, unavailable, planned).",
              {"state": state}, _num(nodes.get(state)))
    for key, value in json_object(summary.get("types")).items():
        d = json_object(value)
        base = {"type": key, "unit": d.get("unit", "gpu")}
        for state in ("allocated", "free", "unavailable"):
            t.add("slurm_gpu_gres_units", "gauge", "GPUs (MIG slices, shards, MPS shares: their own unit) by state.",
                  {**base, "state": state}, _num(d.get(state)))
        t.add("slurm_gpu_gres_stranded_units", "gauge",
              "Free units on nodes without the cores or memory per GPU left to use them.", base,
              _num(d.get("stranded")))
        t.add("slurm_gpu_gres_planned_units", "gauge", "Free units on nodes that backfill has planned.", base,
              _num(d.get("planned")))
        for scope, n in json_object(d.get("largest_startable")).items():
            t.add("slurm_gpu_largest_startable_units", "gauge",
                  "The largest job that can start now (one_node: on one node; any_nodes: over nodes).",
                  {**base, "scope": scope}, _num(n))
        for k, share in json_object(d.get("fragmentation")).items():
            t.add("slurm_gpu_fragmentation_ratio", "gauge",
                  "Share of free units on nodes with fewer than k free (k: units per node a job asks).",
                  {**base, "k": k}, _num(share))
        t.add("slurm_gpu_fragmentation_job_mix_ratio", "gauge",
              "Fragmentation weighted by the sizes recent jobs asked for (ATC'23).", base,
              _num(d.get("fragmentation_job_mix")))
    return t


def _num(v: object) -> float | None:
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or not -1e18 <= v <= 1e18:
        return None  # the range first: an int too large for a float (4,000 digits) stops here, as does NaN
    return v if math.isfinite(v) else None


def job_metrics(records: Iterable[Mapping[str, JsonValue]], t: _Text | None = None) -> _Text:
    """The hooks' JSON-lines records (slurm_gpu.node.stats.record), the last one per (job, node, GPU)."""
    t = t or _Text()
    latest: dict[tuple[str, str, str], Mapping[str, JsonValue]] = {}
    for rec in records:
        if not isinstance(rec, Mapping) or rec.get("job_id") is None:
            continue
        key = (str(rec.get("job_id")), str(rec.get("node", "")), str(rec.get("gpu_index", "")))
        latest.pop(key, None)
        latest[key] = rec
    for (jobid, node, gpu), rec in list(latest.items())[-MAX_JOB_RECORDS:]:
        labels = {"jobid": jobid, "node": node, "gpu": gpu}
        util, mem = _num(rec.get("gpu_util_pct")), _num(rec.get("mem_util_pct"))
        start, end = _num(rec.get("start")), _num(rec.get("end"))
        t.add("slurm_gpu_job_gpu_utilization_ratio", "gauge", "Time-weighted GPU utilisation of the job (0..1).",
              labels, None if util is None else round(min(max(util, 0), 100) / 100, 6))
        t.add("slurm_gpu_job_gpu_memory_utilization_ratio", "gauge", "Time-weighted GPU memory-bus utilisation (0..1).",
              labels, None if mem is None else round(min(max(mem, 0), 100) / 100, 6))
        t.add("slurm_gpu_job_gpu_memory_max_bytes", "gauge", "Peak GPU memory of the job's processes.", labels,
              _num(rec.get("max_memory_bytes")))
        t.add("slurm_gpu_job_gpu_energy_joules_total", "counter", "Energy the GPU used during the job.", labels,
              _num(rec.get("energy_j")))
        t.add("slurm_gpu_job_gpu_duration_seconds", "gauge", "Time between the job's prolog and epilog on the GPU.",
              labels, None if start is None or end is None or end < start else round(end - start, 3))
        t.add("slurm_gpu_job_end_timestamp_seconds", "gauge", "When the job's epilog ran (Unix time).", labels, end)
    return t


def exposition(summary: Mapping[str, JsonValue] | None, records: Iterable[Mapping[str, JsonValue]] = (),
               skipped: int | None = None) -> str:
    """The whole textfile. ``skipped``: Slurm records the cluster view could not read and left out."""
    t = _Text()
    if summary is not None:
        cluster_metrics(summary, t)
        t.add("slurm_gpu_records_skipped", "gauge", "Slurm node or job records the cluster view could not read "
              "and left out (slurm-gpu exporter logs each).", {}, skipped)
    job_metrics(records, t)
    return t.text()


__all__ = ["exposition", "cluster_metrics", "job_metrics", "MAX_JOB_RECORDS"]
