# SPDX-License-Identifier: Apache-2.0
"""From a parsed submission to the normalised JobRequest (pure).

The GPU options are read per form and per type by :mod:`slurm_gpu.slurm.sbatch.gpu_forms` (re-exported
here: ``gpu_forms``, ``check_gpu_options``, ``GpuForms``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from slurm_gpu import units
from slurm_gpu.request import JobRequest
from slurm_gpu.slurm.sbatch import values as sv
from slurm_gpu.slurm.sbatch.gpu_forms import ByType, GpuForms, check_gpu_options, gpu_forms

if TYPE_CHECKING:
    from slurm_gpu.slurm.sbatch.parse import Submission

def _total(form: ByType) -> int | None:
    return sum(c for _, c in form) if form else None


def _mig_profile(types: tuple[str, ...]) -> str | None:
    for gtype in types:
        m = units.MIG_PROFILE_RE.match(gtype)
        if m:
            return units.parse_mig_profile(gtype).name
    return None


def to_job_request(sub: Submission, user: str | None = None, groups: Iterable[str] = (),
                   component: int = 0) -> JobRequest:
    """The normalised request of one component (0 for a normal job): GPU options in every spelling,
    time in minutes (None = no limit), memory in MB."""
    options = dict(sub.components[component]) if getattr(sub, "components", ()) else dict(sub.options)
    get = options.get
    forms = gpu_forms(get)
    types = forms.types
    ntasks_per_gpu = get("ntasks-per-gpu") or get("ntasks-per-tres")
    partitions = sv.parse_partitions(get("partition") or "") if get("partition") else ()
    time_text = get("time")
    time_min = units.parse_time_minutes(time_text) if time_text else None

    def num(name: str) -> int | None:
        value = get(name)
        return None if value is None else int(value)

    def mem(name: str) -> int | None:
        value = get(name)
        return None if value is None else units.parse_mem_mb(value)

    params = sub.gpusub.model_params
    fraction = sub.gpusub.gpu_fraction
    return JobRequest(
        gpus=_total(forms.per_job),
        gpus_per_node=_total(forms.per_node),
        gpus_per_task=_total(forms.per_task),
        gpus_per_socket=_total(forms.per_socket),
        ntasks_per_gpu=int(ntasks_per_gpu) if ntasks_per_gpu else None,
        gpu_type=types[0] if types else None,
        gpu_fraction=sv.parse_gpu_fraction(fraction) if fraction else None,
        mig_profile=_mig_profile(types),
        nodes=sv.parse_nodes_min(nodes_text) if (nodes_text := get("nodes")) else None,
        ntasks=num("ntasks"),
        ntasks_per_node=num("ntasks-per-node"),
        cpus_per_task=num("cpus-per-task"),
        cpus_per_gpu=num("cpus-per-gpu"),
        mem_mb=mem("mem"),
        mem_per_gpu_mb=mem("mem-per-gpu"),
        mem_per_cpu_mb=mem("mem-per-cpu"),
        time_limit_min=time_min,
        partition=partitions[0] if partitions else None,
        qos=get("qos"),
        account=get("account"),
        constraint=get("constraint"),
        job_class=sub.gpusub.job_class,
        user=user,
        groups=tuple(groups),
        array=get("array"),
        interactive=bool(sub.gpusub.interactive),  # gpusub --interactive: a salloc/srun session
        job_name=get("job-name") or ("wrap" if sub.wrap is not None else None),
        model_params=units.parse_param_count(params) if params else None,
        precision=sub.gpusub.precision,
        optimizer=sub.gpusub.optimizer,
        gpu_types=types,
        gpus_by_type=forms.per_job,
        gpus_per_node_by_type=forms.per_node,
        gpus_per_task_by_type=forms.per_task,
        gpus_per_socket_by_type=forms.per_socket,
        mps=forms.sharing.get("mps"),
        shards=forms.sharing.get("shard"),
        partitions=partitions,
        time_unlimited=time_text is not None and time_min is None,
        nodelist_count=len(sv.parse_nodelist(hosts)) if (hosts := get("nodelist")) else None,
        nodelist=_hosts(hosts),
        exclude=_hosts(get("exclude")),
        comment=get("comment"),
        locality_given=any(get(k) is not None for k in ("switches", "segment", "spread-job")),
        nodes_max=sv.parse_nodes_range(nodes_text)[1] if (nodes_text := get("nodes")) else None,
    )


__all__ = ["to_job_request", "gpu_forms", "check_gpu_options", "GpuForms"]


def _hosts(text: str | None) -> tuple[str, ...]:
    """-w / -x: the names (a file name, which sbatch reads when the text has a slash, is not expanded)."""
    if not text or "/" in text:
        return ()
    return sv.parse_nodelist(text)
