# SPDX-License-Identifier: Apache-2.0
"""The GPU options of a submission, per form and per type, and slurmctld's checks of them (pure).

Every GPU spelling sbatch takes, per form (per job ``--gpus``, per node ``--gpus-per-node`` and
``--gres=gpu``, per task ``--gpus-per-task`` and ``--tres-per-task``, per socket) and per type, checked the
way slurmctld checks them at submission (measured on 22.05.8, see docs/gpusub-options.md). The parser
(``parse.py``) checks a submission with it and ``to_request.py`` reads the request from it, so neither
imports the other for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from slurm_gpu.plain import NamedTuple
from slurm_gpu.slurm.sbatch import values as sv

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


__all__ = ["GpuForms", "gpu_forms", "check_gpu_options", "Get", "ByType", "SHARING_GRES", "MIXED_TYPES",
           "GPUS_BELOW_PER_NODE", "NODES_OUTSIDE"]
