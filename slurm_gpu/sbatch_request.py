# SPDX-License-Identifier: Apache-2.0
"""From a parsed submission to the normalised JobRequest (pure). Re-exported by sbatch_options."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from slurm_gpu import sbatch_values as sv
from slurm_gpu.request import JobRequest


_MIG_RE = r"(?:^|_)(\d+g\.\d+gb)$"


def to_job_request(sub: Any, user: str | None = None, groups: Iterable[str] = ()) -> JobRequest:
    """The normalised request: GPU options in every spelling, time in minutes, memory in MB."""
    get = sub.get
    gpu_types: list[str] = []

    def gpu_total(items) -> int:
        total = 0
        for item in items:
            gtype = getattr(item, "gpu_type", None) or getattr(item, "gres_type", None)
            if gtype:
                gpu_types.append(gtype)
            total += item.count
        return total

    def gpus_of(name: str) -> int | None:
        value = get(name)
        return None if value is None else gpu_total(sv.parse_gpus(value))

    gpus = gpus_of("gpus")
    gpus_per_node = gpus_of("gpus-per-node")
    if get("gres") is not None:
        gres_gpus = [g for g in sv.parse_gres(get("gres")) if g.name == "gpu"]
        if gres_gpus and gpus_per_node is None:
            gpus_per_node = gpu_total(gres_gpus)
    gpus_per_task = gpus_of("gpus-per-task")
    if get("tres-per-task") is not None and gpus_per_task is None:
        tres_gpus = [g for g in sv.parse_tres(get("tres-per-task")) if g.name == "gpu"]
        if tres_gpus:
            gpus_per_task = gpu_total(tres_gpus)
    gpus_per_socket = gpus_of("gpus-per-socket")
    ntasks_per_gpu = get("ntasks-per-gpu") or get("ntasks-per-tres")
    gpu_type = gpu_types[0] if gpu_types else None
    mig = re.search(_MIG_RE, gpu_type or "")

    def num(name: str) -> int | None:
        value = get(name)
        return None if value is None else int(value)

    def mem(name: str) -> int | None:
        value = get(name)
        return None if value is None else sv.parse_mem_mb(value)

    params = sub.gpusub.get("model_params")
    fraction = sub.gpusub.get("gpu_fraction")
    return JobRequest(
        gpus=gpus,
        gpus_per_node=gpus_per_node,
        gpus_per_task=gpus_per_task,
        gpus_per_socket=gpus_per_socket,
        ntasks_per_gpu=int(ntasks_per_gpu) if ntasks_per_gpu else None,
        gpu_type=gpu_type,
        gpu_fraction=sv.parse_gpu_fraction(fraction) if fraction else None,
        mig_profile=mig.group(1) if mig else None,
        nodes=sv.parse_nodes_min(get("nodes")) if get("nodes") else None,
        ntasks=num("ntasks"),
        ntasks_per_node=num("ntasks-per-node"),
        cpus_per_task=num("cpus-per-task"),
        cpus_per_gpu=num("cpus-per-gpu"),
        mem_mb=mem("mem"),
        mem_per_gpu_mb=mem("mem-per-gpu"),
        mem_per_cpu_mb=mem("mem-per-cpu"),
        time_limit_min=sv.parse_time_min(get("time")) if get("time") else None,
        partition=get("partition"),
        qos=get("qos"),
        account=get("account"),
        constraint=get("constraint"),
        job_class=sub.gpusub.get("class"),
        user=user,
        groups=tuple(groups),
        array=get("array"),
        interactive=False,
        job_name=get("job-name") or ("wrap" if sub.wrap is not None else None),
        model_params=sv.parse_model_params(params) if params else None,
        precision=sub.gpusub.get("precision"),
        optimizer=sub.gpusub.get("optimizer"),
    )


__all__ = ["to_job_request"]
