# SPDX-License-Identifier: Apache-2.0
"""Alibaba's pod lists with fractional GPUs (cluster-trace-gpu-v2023, "openb"), pure: lines in,
:class:`~slurm_gpu.sim.traces.Trace` out; and a seeded synthetic pod list of the same format.

Columns (a header line): ``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos, pod_phase,
creation_time, deletion_time, scheduled_time``. Required: ``name, num_gpu, creation_time,
scheduled_time, deletion_time``. How a pod becomes a job (docs/simulate.md "Traces"):

- submit = ``creation_time``, start = ``scheduled_time``, run time = ``deletion_time - scheduled_time``
  (seconds; the trace's own times are offsets from its start, read as epoch seconds). A pod with no
  ``scheduled_time`` (``Pending``: never ran) or no ``deletion_time`` is skipped and counted.
- ``num_gpu`` whole GPUs; with ``num_gpu`` 1 and ``gpu_milli`` under 1000, the job asks for the
  fraction ``gpu_milli / 1000`` of one GPU (``gpu_fraction``: the policy's isolation makes it a MIG
  slice or an MPS share, or rejects it). ``gpu_milli`` is 1..1000 for a GPU pod; a fraction with
  ``num_gpu`` > 1 is refused (the trace only shares single GPUs). ``num_gpu`` 0: a CPU-only pod.
- ``gpu_spec`` with one name is the GPU type (as written: a name the site's policy does not know is
  the policy's rejection); several (``V100M16|V100M32``) or none: untyped (the policy's default type).
- ``cpu_milli`` / 1000, rounded up, is the CPU count. The pod lists have no user, account, partition,
  QOS or time limit: each pod is its own user (Kubernetes had no per-user GPU limit), the Kubernetes
  ``qos`` (LS, BE, Burstable) is not a Slurm QOS and is not read, and the time limit is derived
  (:func:`~slurm_gpu.sim.traces.derive_time_limit`).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable

from slurm_gpu.sim.trace_fields import (
    CsvRows,
    Trace,
    TraceError,
    TraceJob,
    Where,
    check_count,
    finish,
    is_empty,
    read_count,
    read_csv_trace,
    read_time,
)

COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
           "creation_time", "deletion_time", "scheduled_time")
REQUIRED = ("name", "num_gpu", "creation_time", "scheduled_time", "deletion_time")
_TYPE_RE = r"^[A-Za-z0-9_.-]{1,64}$"


def is_header(first_line: str) -> bool:
    """Whether a first line is an Alibaba pod list's header."""
    cols = {c.strip().lower() for c in first_line.split(",")}
    return {"gpu_milli", "creation_time", "num_gpu"} <= cols


def read_alibaba(lines: Iterable[str], name: str = "<trace>") -> Trace:
    return read_csv_trace(lines, name, _read)


def _read(rows: CsvRows, name: str, header: list[str]) -> Trace:
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise TraceError(f"{name}:1:1: missing column(s) {', '.join(missing)} (an Alibaba pod list)")
    where = Where(name, header)
    fmt: list[str] = []
    jobs: list[TraceJob] = []
    skipped = 0
    for row in rows:
        where.line = rows.line_num
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) != len(header):
            raise TraceError(f"{name}:{where.line}:1: {len(row)} fields, the header has {len(header)}")
        f = {k: (None if is_empty(v) else v.strip()) for k, v in zip(header, row, strict=True)}
        created = read_time(f["creation_time"] or "", where, "creation_time", fmt)
        if f["scheduled_time"] is None or f["deletion_time"] is None:
            skipped += 1  # never scheduled (Pending), or no end
            continue
        start = read_time(f["scheduled_time"], where, "scheduled_time", fmt)
        end = read_time(f["deletion_time"], where, "deletion_time", fmt)
        if start < created:
            raise where.error("scheduled_time", "scheduled before it was created")
        if end < start:
            raise where.error("deletion_time", "deleted before it was scheduled")
        gpus = read_count(f["num_gpu"] or "0", where, "num_gpu")
        frac = _fraction(f.get("gpu_milli"), gpus, where)
        cpu = f.get("cpu_milli")
        spec_text = f.get("gpu_spec") or ""
        spec = [s.strip() for s in spec_text.split("|") if s.strip()]
        if any(not re.match(_TYPE_RE, s) for s in spec):
            raise where.error("gpu_spec", f"bad GPU type in {spec_text[:40]!r}: expected names joined by |")
        check_count(jobs, where)
        jobs.append(TraceJob(
            job_id=f["name"] or str(where.line), submit=created, duration=end - start, gpus=gpus,
            cpus=math.ceil(read_count(cpu, where, "cpu_milli") / 1000) if cpu else None, user=f["name"],
            gpu_type=spec[0] if len(spec) == 1 else None, gpu_fraction=frac,
            state=(f.get("pod_phase") or "").upper() or None, start=start, line=where.line))
    return finish(jobs, fmt, skipped, name)


def _fraction(text: str | None, gpus: int, where: Where) -> float | None:
    """The fraction of one GPU (None: whole GPUs) from ``gpu_milli``."""
    if gpus == 0:
        return None
    milli = 1000 if text is None else read_count(text, where, "gpu_milli")
    if not 1 <= milli <= 1000:
        raise where.error("gpu_milli", f"bad gpu_milli {milli}: expected 1..1000 for a GPU pod")
    if milli == 1000:
        return None
    if gpus > 1:
        raise where.error("gpu_milli", f"a fraction ({milli}/1000) of {gpus} GPUs: only one GPU is shared")
    return milli / 1000


# ---- a synthetic pod list ---------------------------------------------------------------------

FRACTIONAL_SHARE = 3078 / 8152  # the openb default pod list: 3,078 of 8,152 pods share a GPU (notes)


def synthetic(seed: int = 2023, pods: int = 300, mean_gap_s: float = 240.0) -> str:
    """A seeded pod list in the openb format (docs/simulate.md "An Alibaba sample"). From the published
    trace: the share of fractional pods (3,078 of 8,152), ``num_gpu`` 0..8, ``gpu_milli`` only with
    ``num_gpu`` 1, pods that never ran (Pending, no ``scheduled_time``). Ours: the mix of whole-GPU
    counts, the fractions, log-normal run times (median 20 min, sigma 1.2, 1 min .. 12 h), Poisson
    arrivals, and ``gpu_spec`` naming the site's types (a100 or h100) for a quarter of whole-GPU pods."""
    rng = random.Random(seed)
    out = [",".join(COLUMNS)]
    t = 0
    fractional = set(rng.sample(range(pods), round(pods * FRACTIONAL_SHARE)))  # exactly the published share
    for i in range(pods):
        t += int(rng.expovariate(1 / mean_gap_s))
        run = int(min(43200, max(60, rng.lognormvariate(math.log(1200), 1.2))))
        spec = ""
        if i in fractional:
            gpus, milli = 1, rng.choice((100, 140, 200, 250, 280, 300, 400, 420, 460, 500))
        elif rng.random() < 0.92:
            gpus = rng.choices((1, 2, 4, 8), weights=(65, 15, 12, 8))[0]
            milli = 1000
            if rng.random() < 0.25:
                spec = "a100" if gpus <= 4 and rng.random() < 0.5 else "h100"
        else:
            gpus, milli = 0, 0
        phase = rng.choices(("Succeeded", "Failed", "Running", "Pending"), weights=(60, 20, 17, 3))[0]
        sched = "" if phase == "Pending" else str(t)
        end = t + (rng.randrange(5, 120) if phase == "Pending" else run)
        out.append(f"synth-pod-{i:04d},{rng.choice((2000, 4000, 8000, 16000)) * max(gpus, 1)},"
                   f"{rng.choice((8192, 16384, 32768)) * max(gpus, 1)},{gpus},{milli},{spec},"
                   f"{rng.choice(('LS', 'BE', 'Burstable'))},{phase},{t},{end},{sched}")
    return "\n".join(out) + "\n"
