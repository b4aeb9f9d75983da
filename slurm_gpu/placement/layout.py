# SPDX-License-Identifier: Apache-2.0
"""What both launches (:mod:`~slurm_gpu.placement.plan` for ``batch``, :mod:`~slurm_gpu.placement.per_gpu`
for ``per-gpu``) plan with and return (pure): a node type as the planner sees it (:class:`NodeLayout`),
the plan (:class:`BindingPlan`) and the arithmetic both share. ``placement.plan`` re-exports the records,
so ``from slurm_gpu.placement.plan import BindingPlan`` keeps working."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from slurm_gpu.jsontypes import JsonObject
from slurm_gpu.plain import NamedTuple

if TYPE_CHECKING:  # the types only: gpusub's start does not load the policy model for them
    from slurm_gpu.policy.model import Defaults
    from slurm_gpu.topology.model import Topology

ISOLATIONS = ("shared", "strict")
LAUNCHES = ("batch", "per-gpu")  # batch: the script runs once, as under sbatch (default)
# sbatch options by which the user picks the job's sockets and cores (-B S[:C[:T]] and its parts): with them,
# --gres-flags=enforce-binding (every core on a socket of the job's GPUs) can make a job unschedulable that
# sbatch starts (-B 2:16 with one GPU: 32 cores on two sockets, the GPU's socket has 16), so the planners
# add none
SOCKET_SHAPE_OPTIONS = frozenset({"extra-node-info", "sockets-per-node", "cores-per-socket", "threads-per-core"})


class NodeLayout(NamedTuple):  # NamedTuples, not frozen dataclasses: ~1 ms less of gpusub's start each
    """One node type as the planner sees it: which socket each GPU is local to, and the cores per GPU."""

    name: str
    nodes: str  # hostlist ("" if unknown)
    gpu_sockets: tuple[tuple[int, int], ...]  # (gpu index, socket); socket -1 = unknown / spread
    socket_gpus: tuple[tuple[int, tuple[int, ...]], ...]  # socket -> GPU indices, sockets with GPUs only
    local_cores_per_gpu: int  # min over GPUs of (cores local to it / GPUs sharing those cores)
    cores_per_socket: int
    sockets: int

    @property
    def gpus(self) -> int:
        return len(self.gpu_sockets)

    @property
    def max_gpus_one_socket(self) -> int:
        return max((len(g) for _s, g in self.socket_gpus), default=0)

    def sockets_needed(self, gpus: int) -> int:
        """Fewest sockets whose local GPUs add up to ``gpus``."""
        left, used = gpus, 0
        for count in sorted((len(g) for _s, g in self.socket_gpus), reverse=True):
            if left <= 0:
                break
            left -= count
            used += 1
        return used if left <= 0 else max(used, 1)

    def socket_major_order(self) -> tuple[int, ...]:
        """GPU indices in the order tasks laid out block over sockets meet them."""
        return tuple(g for _s, gpus in sorted(self.socket_gpus) for g in gpus)


def node_layout(topo: Topology, name: str = "", nodes: str = "") -> NodeLayout:
    """Read a Topology (slurm_gpu.topology) into a NodeLayout."""
    per_gpu: list[tuple[int, int]] = []
    core_sets: dict[tuple[int, ...], list[int]] = {}
    for gpu in topo.gpus:
        cores = tuple(topo.gpu_cores(gpu.index))
        sockets = {topo.core_socket(c) for c in cores}
        per_gpu.append((gpu.index, sockets.pop() if len(sockets) == 1 else -1))
        core_sets.setdefault(cores, []).append(gpu.index)
    by_socket: dict[int, list[int]] = {}
    for index, socket in per_gpu:
        if socket >= 0:
            by_socket.setdefault(socket, []).append(index)
    shares = [len(cores) // len(gpus) for cores, gpus in core_sets.items() if cores]
    return NodeLayout(
        name=name, nodes=nodes, gpu_sockets=tuple(per_gpu),
        socket_gpus=tuple((s, tuple(sorted(g))) for s, g in sorted(by_socket.items())),
        local_cores_per_gpu=min(shares) if shares else 0,
        cores_per_socket=topo.cores_per_socket, sockets=topo.sockets)


class BindingPlan(NamedTuple):
    """What gpusub adds to the job so that tasks, cores and GPUs line up."""

    sbatch_options: tuple[str, ...]
    srun_options: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    tasks: int
    cpus_per_task: int
    gpus_per_task: int | None
    isolation: str
    launch: str
    explanation: tuple[str, ...]
    nodes: int = 1
    gpus_per_node: int = 0
    cpus_per_gpu: int = 0
    sockets_per_node: int = 1
    tasks_per_socket: int | None = None
    gpu_order: tuple[tuple[str, tuple[int, ...]], ...] = ()  # (hostlist, socket-major GPU order)
    task_prelude: str = ""  # bash run in each task before the payload (GPU order, LOCAL_RANK)
    warnings: tuple[str, ...] = ()

    def to_json(self) -> JsonObject:
        return {
            "tasks": self.tasks, "cpus_per_task": self.cpus_per_task, "gpus_per_task": self.gpus_per_task,
            "nodes": self.nodes, "gpus_per_node": self.gpus_per_node, "cpus_per_gpu": self.cpus_per_gpu,
            "sockets_per_node": self.sockets_per_node, "tasks_per_socket": self.tasks_per_socket,
            "isolation": self.isolation, "launch": self.launch,
            "sbatch_options": list(self.sbatch_options), "srun_options": list(self.srun_options),
            "env": dict(self.env), "gpu_order": {hosts: list(order) for hosts, order in self.gpu_order},
            "explanation": list(self.explanation), "warnings": list(self.warnings),
        }


def ceil_div(a: int, b: int) -> int:
    """``a / b`` rounded up (whole numbers)."""
    return -(-a // b)


def known(value: int | None) -> int | None:
    """A count the user gave (> 0), else None (unset, 0 or a sentinel)."""
    return value if isinstance(value, int) and value > 0 else None


def default_cpus_per_gpu(defaults: Defaults | None, layouts: Sequence[NodeLayout]) -> int | None:
    """The policy's CPUs per GPU: a number, or ``topology`` = the cores local to each GPU (the least
    over the node types; none given: None). The emitter writes the same value as the partition's
    DefCpuPerGPU."""
    value = defaults.cpus_per_gpu if defaults is not None else None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if value == "topology" and layouts:
        return min(lay.local_cores_per_gpu for lay in layouts) or None
    return None


__all__ = ["BindingPlan", "NodeLayout", "node_layout", "default_cpus_per_gpu", "ceil_div", "known", "ISOLATIONS",
           "LAUNCHES"]
