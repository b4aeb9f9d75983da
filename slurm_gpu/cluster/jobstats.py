# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu jobstats``: one job's (or one array's) GPU, CPU and memory efficiency, pure.

In: the rows of one ``sacct -P`` call (the job's allocation rows and their steps; docs/report.md
"jobstats") and, optionally, the policy's GPU types. The per-GPU figures come from the job's AdminComment
summary (:mod:`slurm_gpu.cluster.summary_codec`); CPU and memory efficiency from sacct as seff computes
them. Out: a JSON-able document and its text lines, with notes that carry numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, NotRequired, TypedDict

from slurm_gpu.cluster.summary_codec import Summary, decode
from slurm_gpu.digits import is_digits
from slurm_gpu.slurm.records import ACTIVE_STATES
from slurm_gpu.slurm.sacct import sacct_bytes, sacct_seconds, tres_gpus, tres_value
from slurm_gpu.units import parse_mig_profile

if TYPE_CHECKING:
    from slurm_gpu.policy.model import Policy

# Princeton jobstats' thresholds (shared/notes/cluster-view-and-reports.md)
GPU_NOTE_PCT = 25.0  # a GPU below this utilisation gets a note
CPU_NOTE = 0.80  # CPU efficiency at or below this gets a note
MEM_NOTE = 0.70  # memory use below this share of the allocation gets a note
TIME_NOTE = 0.60  # time used below this share of the limit gets a note
MIN_NOTE_SECONDS = 300  # no notes for jobs shorter than this
GB = 1e9  # GPU memory, as the policy's memory_gb and MIG profiles count it
GIB = 1 << 30  # host memory, as Slurm's --mem counts it
SCHEMA = "slurm-gpu.jobstats/1"


class GpuRow(TypedDict):
    """One GPU of the job, from its AdminComment summary (shares in 0..1; None: not known)."""

    node: str
    index: int | None
    utilization: float | None
    memory_utilization: float | None
    max_memory_bytes: int | None
    energy_joules: float | None


class JobDoc(TypedDict):
    """One job's (or array task's) entry of ``jobs`` (docs/report.md "jobstats")."""

    job_id: str
    job_id_raw: str
    user: str
    account: str
    partition: str
    state: str
    nodes: int
    elapsed_seconds: float
    time_limit_seconds: float | None
    gpus: int
    gpu_types: dict[str, int]
    gpu_seconds: float
    gpu_hours: float
    gpu_utilization: float | None
    gpu_stats: bool  # whether the job has a slurm-gpu summary
    gpu: list[GpuRow]
    energy_joules: float | None
    cpus: int
    cpu_seconds: float | None
    cpu_efficiency: float | None
    memory_bytes: int | None
    max_rss_bytes: int | None
    memory_efficiency: float | None
    notes: list[str]


class ArrayDoc(TypedDict):
    """An array's aggregate figures (E = sum(U g t) / sum(g t) over the tasks with stats)."""

    tasks: int
    states: dict[str, int]
    gpu_hours: float
    gpu_hours_with_stats: float
    gpu_utilization: float | None
    cpu_efficiency: float | None


class JobstatsDoc(TypedDict):
    """The ``slurm-gpu jobstats --json`` document (schema ``slurm-gpu.jobstats/1``)."""

    schema: str
    jobs: list[JobDoc]
    array: NotRequired[ArrayDoc]  # only for an array (more than one job)


def _f(value: float | None, nd: int = 4) -> float | None:
    return None if value is None else round(value, nd)


def job_rows(rows: Sequence[Mapping[str, str]]) -> list[tuple[Mapping[str, str], list[Mapping[str, str]]]]:
    """sacct rows -> (allocation row, its step rows) per job, in sacct's order. A step is a row whose
    JobID has a ``.`` (``123.batch``, ``123_4.0``); it belongs to the job row with the JobID before it."""
    jobs: dict[str, tuple[Mapping[str, str], list[Mapping[str, str]]]] = {}
    for row in rows:
        jid = row.get("JobID", "")
        base, dot, _ = jid.partition(".")
        if not dot:
            jobs.setdefault(jid, (row, []))
        elif base in jobs:
            jobs[base][1].append(row)
    return list(jobs.values())


def _smallest_mig(peak_bytes: int, policy: Policy | None) -> str | None:
    """The smallest MIG profile (by memory) of the policy's MIG-capable GPU types that holds ``peak``."""
    best: tuple[float, str] | None = None
    for gt in getattr(policy, "gpu_types", ()) if policy is not None else ():
        for prof in gt.mig_profiles if gt.mig_capable else ():
            mem = parse_mig_profile(prof).memory_gb
            if mem * GB >= peak_bytes and (best is None or mem < best[0]):
                best = (mem, prof)
    return None if best is None else best[1]


def one_job(row: Mapping[str, str], steps: Sequence[Mapping[str, str]], policy: Policy | None = None) -> JobDoc:
    """One job's figures and notes."""
    elapsed = float(row.get("ElapsedRaw") or 0) if is_digits(row.get("ElapsedRaw") or "") else \
        (sacct_seconds(row.get("Elapsed")) or 0.0)
    ncpus = int(row["NCPUS"]) if is_digits(row.get("NCPUS") or "") else 0
    nnodes = int(row["NNodes"]) if is_digits(row.get("NNodes") or "") else 1
    # sacct adds a step's CPU time and MaxRSS when the step ends: no efficiency while the job may still run
    active = (row.get("State") or "").split(" ")[0] in ACTIVE_STATES
    cpu_s = sacct_seconds(row.get("TotalCPU"))
    cpu_eff = cpu_s / (elapsed * ncpus) if cpu_s is not None and elapsed > 0 and ncpus > 0 and not active else None
    alloc_mem = sacct_bytes(tres_value(row.get("AllocTRES"), "mem"))
    peaks = [b for s in steps if (b := sacct_bytes(s.get("MaxRSS"))) is not None]
    peak_rss = max(peaks) if peaks else None
    per_node_mem = alloc_mem / max(nnodes, 1) if alloc_mem else None
    mem_eff = peak_rss / per_node_mem if peak_rss is not None and per_node_mem and not active else None
    limit_s = sacct_seconds(row.get("Timelimit")) if ":" in (row.get("Timelimit") or "") else None
    gpus = tres_gpus(row.get("AllocTRES"))
    summary: Summary | None = decode(row.get("AdminComment"))
    gpu_rows: list[GpuRow] = []
    if summary is not None:
        for node in sorted(summary.nodes):
            for g in summary.nodes[node]:
                gpu_rows.append({"node": node, "index": g.index, "utilization": _f(None if g.gpu_util_pct is None
                                                                                      else g.gpu_util_pct / 100),
                                 "memory_utilization": _f(None if g.mem_util_pct is None else g.mem_util_pct / 100),
                                 "max_memory_bytes": g.max_memory_bytes, "energy_joules": g.energy_j})
    util = summary.utilisation() if summary is not None else None
    g_total = sum(gpus.values())
    energies = [r["energy_joules"] for r in gpu_rows if r["energy_joules"] is not None]
    doc: JobDoc = {
        "job_id": row.get("JobID", ""), "job_id_raw": row.get("JobIDRaw", ""), "user": row.get("User", ""),
        "account": row.get("Account", ""), "partition": row.get("Partition", ""), "state": row.get("State", ""),
        "nodes": nnodes, "elapsed_seconds": elapsed, "time_limit_seconds": limit_s,
        "gpus": g_total, "gpu_types": gpus, "gpu_seconds": g_total * elapsed,
        "gpu_hours": round(g_total * elapsed / 3600, 6),
        "gpu_utilization": _f(util), "gpu_stats": summary is not None, "gpu": gpu_rows,
        "energy_joules": _f(sum(energies), 3) if energies else None,
        "cpus": ncpus, "cpu_seconds": _f(cpu_s, 3), "cpu_efficiency": _f(cpu_eff),
        "memory_bytes": alloc_mem, "max_rss_bytes": peak_rss, "memory_efficiency": _f(mem_eff), "notes": [],
    }
    doc["notes"] = notes(doc, policy)
    return doc


def notes(doc: JobDoc, policy: Policy | None = None) -> list[str]:
    """Advice with numbers (jobstats' thresholds); none for jobs under MIN_NOTE_SECONDS."""
    if doc["elapsed_seconds"] < MIN_NOTE_SECONDS:
        return []
    out: list[str] = []
    for g in doc["gpu"]:
        u = g["utilization"]
        if u is not None and u * 100 < GPU_NOTE_PCT:
            out.append(f"GPU {g['index']} on {g['node']} idle {round(100 - u * 100)}% of the time"
                       if u > 0 else f"GPU {g['index']} on {g['node']} was not used (0% utilisation)")
    peaks = [g["max_memory_bytes"] for g in doc["gpu"] if g["max_memory_bytes"] is not None]
    types = (policy.gpu_type(t) for t in doc["gpu_types"]) if policy is not None else ()
    known = [gt for gt in types if gt is not None]
    if peaks and known and doc["gpus"] == 1:
        peak, size = max(peaks), known[0].memory_gb
        if peak <= size * GB / 2:
            mig = _smallest_mig(peak, policy)
            tail = f": a {mig} MIG slice would do" if mig else ""
            out.append(f"peak GPU memory {peak / GB:.0f} GB of {size:g}{tail}")
    eff, cpus = doc["cpu_efficiency"], doc["cpus"]
    if eff is not None and cpus > 1 and eff <= CPU_NOTE:
        used = max(1, round(eff * cpus))
        out.append(f"asked {cpus} cores, used {used} (CPU efficiency {eff * 100:.0f}%)")
    mem, peak_rss = doc["memory_bytes"], doc["max_rss_bytes"]
    if doc["memory_efficiency"] is not None and doc["memory_efficiency"] < MEM_NOTE and mem and peak_rss is not None:
        suggest = math.ceil(1.2 * peak_rss / GIB)  # jobstats' advice: 1.2 x the peak, in Slurm's G (GiB)
        out.append(f"asked {mem / GIB:.0f}G of memory per node, peak {peak_rss / GIB:.2f}G: "
                   f"--mem={max(suggest, 1)}G would do")
    limit = doc["time_limit_seconds"]
    if limit and doc["elapsed_seconds"] < TIME_NOTE * limit:
        out.append(f"used {doc['elapsed_seconds'] / limit * 100:.0f}% of the {limit / 3600:g} h time limit")
    return out


def jobstats(rows: Sequence[Mapping[str, str]], policy: Policy | None = None) -> JobstatsDoc:
    """The document for one job or one array: ``jobs`` (one entry per job or array task) and, for an
    array, ``array`` with its aggregate figures (E = sum(U g t) / sum(g t) over the tasks with stats)."""
    jobs = [one_job(row, steps, policy) for row, steps in job_rows(rows)]
    doc: JobstatsDoc = {"schema": SCHEMA, "jobs": jobs}
    if len(jobs) > 1:
        with_stats = [(u, j["gpu_seconds"]) for j in jobs if (u := j["gpu_utilization"]) is not None
                      and j["gpu_seconds"] > 0]
        gh = sum(j["gpu_seconds"] for j in jobs) / 3600
        gh_s = sum(gs for _u, gs in with_stats) / 3600
        eff = sum(u * gs for u, gs in with_stats) / 3600
        cpu = [(c, j["cpus"] * j["elapsed_seconds"]) for j in jobs
               if (c := j["cpu_seconds"]) is not None and j["cpus"] and j["elapsed_seconds"]]
        cpu_all = sum(whole for _c, whole in cpu)
        doc["array"] = {
            "tasks": len(jobs), "states": _count(j["state"].split(" ")[0] for j in jobs),
            "gpu_hours": round(gh, 6), "gpu_hours_with_stats": round(gh_s, 6),
            "gpu_utilization": _f(eff / gh_s) if gh_s > 0 else None,
            "cpu_efficiency": _f(sum(c for c, _whole in cpu) / cpu_all) if cpu_all > 0 else None,
        }
    return doc


def _count(items: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return dict(sorted(out.items()))


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def lines(doc: JobstatsDoc, max_tasks: int = 20) -> list[str]:
    """The text view."""
    out: list[str] = []
    arr = doc.get("array")
    if arr:
        out.append(f"array: {arr['tasks']} tasks ({', '.join(f'{k} {v}' for k, v in arr['states'].items())}); "
                   f"{arr['gpu_hours']:.2f} GPU-hours, GPU utilisation {_pct(arr['gpu_utilization'])} "
                   f"(over {arr['gpu_hours_with_stats']:.2f} GPU-hours with stats), "
                   f"CPU efficiency {_pct(arr['cpu_efficiency'])}")
    jobs = doc["jobs"]
    for j in jobs[:max_tasks]:
        out.append(f"job {j['job_id']} ({j['user']}, {j['account']}, {j['partition']}) {j['state']}: "
                   f"{j['elapsed_seconds']:.0f} s on {j['nodes']} node(s), {j['gpus']} GPU(s), "
                   f"{j['gpu_hours']:.3f} GPU-hours")
        if j["gpu_stats"]:
            energy = "" if j["energy_joules"] is None else f", energy {j['energy_joules'] / 3.6e6:.3f} kWh"
            out.append(f"  GPU utilisation {_pct(j['gpu_utilization'])}{energy}")
            for g in j["gpu"]:
                mem = "-" if g["max_memory_bytes"] is None else f"{g['max_memory_bytes'] / GB:.1f} GB"
                en = "-" if g["energy_joules"] is None else f"{g['energy_joules']:.0f} J"
                out.append(f"    {g['node']} GPU {g['index']}: utilisation {_pct(g['utilization'])}, "
                           f"peak memory {mem}, energy {en}")
        elif j["gpus"]:
            out.append("  GPU figures: none (no slurm-gpu summary in the job's AdminComment)")
        out.append(f"  CPU efficiency {_pct(j['cpu_efficiency'])} of {j['cpus']} cores; memory "
                   f"{_pct(j['memory_efficiency'])} of the allocation per node")
        out.extend(f"  note: {n}" for n in j["notes"])
    if len(jobs) > max_tasks:
        out.append(f"... {len(jobs) - max_tasks} more tasks (--json lists them all)")
    return out


__all__ = ["jobstats", "JobstatsDoc", "JobDoc", "GpuRow", "ArrayDoc",
           "one_job", "job_rows", "notes", "lines", "SCHEMA", "MIN_NOTE_SECONDS"]
