# SPDX-License-Identifier: Apache-2.0
"""From a parsed submission to the normalised JobRequest (pure).

Every GPU spelling sbatch takes is read here, per form (per job ``--gpus``, per node ``--gpus-per-node``
and ``--gres=gpu``, per task ``--gpus-per-task`` and ``--tres-per-task``, per socket) and per type, and
checked the way slurmctld checks them at submission (measured on 22.05.8, see docs/gpusub-options.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from slurm_gpu import units
from slurm_gpu.plain import NamedTuple
from slurm_gpu.request import JobRequest
from slurm_gpu.slurm.sbatch import values as sv

if TYPE_CHECKING:
    from slurm_gpu.slurm.sbatch.parse import Submission

Get = Callable[[str], "str | None"]
ByType = tuple[tuple["str | None", int], ...]

SHARING_GRES = ("mps", "shard")  # GPU-sharing GRES: their counts are shares, not GPUs

MIXED_TYPES = ("Invalid GRES specification (with and without type identification): "
               "name a GPU type in every GPU option, or in none")
GPUS_BELOW_PER_NODE = "Failed to ensure --gpus >= --gres=gpu/--gpus-per-node >= --gpus-per-socket"
NODES_OUTSIDE = ("Failed to validate job spec. Based on --gpu and --gres=gpu/--gpus-per-node required nodes "
                 "({req}) doesn't fall between min_nodes ({lo}) and max_nodes ({hi}) boundaries.")


class GpuForms(NamedTuple):
    """The GPU request of one job (component), per form, each as ((type or None, count), ...)."""

    per_job: ByType
    per_node: ByType
    per_task: ByType
    per_socket: ByType
    sharing: dict[str, int]  # "mps"/"shard" -> count per node

    @property
    def types(self) -> tuple[str, ...]:
        """Every GPU type named, in the order the forms were read, without repeats."""
        seen: dict[str, None] = {}
        for form in (self.per_job, self.per_node, self.per_task, self.per_socket):
            for gtype, _ in form:
                if gtype is not None:
                    seen.setdefault(gtype)
        return tuple(seen)


def _merge(items: Iterable[tuple[str | None, int]]) -> ByType:
    """Items that land in one Slurm field (``--gres`` and ``--gpus-per-node`` both go to tres_per_node):
    one entry per type, the largest count wins (measured: ``--gres=gpu:2 --gpus-per-node=3`` -> 3)."""
    out: dict[str | None, int] = {}
    for gtype, count in items:
        out[gtype] = max(count, out.get(gtype, 0))
    return tuple(out.items())


def gpu_forms(get: Get) -> GpuForms:
    def gpus(name: str) -> list[tuple[str | None, int]]:
        value = get(name)
        return [] if value is None else [(g.gpu_type, g.count) for g in sv.parse_gpus(value)]

    gres_text, tres_text = get("gres"), get("tres-per-task")
    gres = sv.parse_gres(gres_text) if gres_text is not None else ()
    tres = sv.parse_tres(tres_text) if tres_text is not None else ()
    sharing: dict[str, int] = {}
    for g in gres:
        if g.name in SHARING_GRES:
            sharing[g.name] = max(g.count, sharing.get(g.name, 0))
    return GpuForms(
        per_job=_merge(gpus("gpus")),
        per_node=_merge(gpus("gpus-per-node") + [(g.gres_type, g.count) for g in gres if g.name == "gpu"]),
        per_task=_merge(gpus("gpus-per-task") + [(g.gres_type, g.count) for g in tres if g.name == "gpu"]),
        per_socket=_merge(gpus("gpus-per-socket")),
        sharing=sharing,
    )


def check_gpu_options(get: Get) -> None:
    """Refuse GPU options slurmctld refuses at submission, with its message (ValueError)."""
    forms = gpu_forms(get)
    items = [i for form in forms[:4] for i in form]
    if any(t is None for t, _ in items) and any(t is not None for t, _ in items):
        raise ValueError(MIXED_TYPES)
    job, node, sock = dict(forms.per_job), dict(forms.per_node), dict(forms.per_socket)
    for gtype, count in node.items():
        if (gtype in job and job[gtype] < count) or (gtype in sock and count < sock[gtype]):
            raise ValueError(GPUS_BELOW_PER_NODE)
        if gtype in job and count and get("nodes") is not None:
            lo, hi = sv.parse_nodes_range(get("nodes") or "")
            req = -(-job[gtype] // count)
            if not lo <= req <= hi:
                raise ValueError(NODES_OUTSIDE.format(req=req, lo=lo, hi=hi))


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
        comment=get("comment"),
    )


__all__ = ["to_job_request", "gpu_forms", "check_gpu_options", "GpuForms"]
