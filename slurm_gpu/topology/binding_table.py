# SPDX-License-Identifier: Apache-2.0
"""The per-node-type binding table gpusub's binding planner consumes: for each GPU its local cores
(Slurm abstract ids), OS cpus, socket and NUMA node, plus GPU groups by link quality."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING

from slurm_gpu.cpulist import format_cpulist
from slurm_gpu.plain import Record, record
from slurm_gpu.topology.model import PCIE_RELATIONS, Topology, relation_rank

if TYPE_CHECKING:
    from slurm_gpu.jsontypes import JsonObject

# Group levels, best first: GPUs joined by NVLink, then by at most PIX ... NODE. SYS joins everything.
GROUP_LEVELS: tuple[str, ...] = ("NVLINK",) + PCIE_RELATIONS[:-1]


@record
class GpuBinding(Record):
    index: int
    cores: tuple[int, ...]  # Slurm abstract core ids
    cpus: tuple[int, ...]  # OS cpu ids (hardware threads)
    socket: int | None
    numa_node: int | None

    @property
    def cpus_text(self) -> str:
        return format_cpulist(self.cpus)


@record
class GpuGroup(Record):
    level: str  # "NVLINK", "PIX", "PXB", "PHB", "NODE", or "NUMA" (same NUMA node)
    gpus: tuple[int, ...]


@record
class BindingTable(Record):
    gpus: tuple[GpuBinding, ...]
    groups: tuple[GpuGroup, ...]
    cores_per_socket: int
    threads_per_core: int

    def gpu(self, index: int) -> GpuBinding:
        return next(g for g in self.gpus if g.index == index)

    def to_json(self) -> JsonObject:
        return asdict(self)


def _components(nodes: list[int], joined: Callable[[int, int], bool]) -> list[tuple[int, ...]]:
    seen: set[int] = set()
    out = []
    for n in nodes:
        if n in seen:
            continue
        comp, todo = [], [n]
        seen.add(n)
        while todo:
            x = todo.pop()
            comp.append(x)
            for y in nodes:
                if y not in seen and joined(x, y):
                    seen.add(y)
                    todo.append(y)
        out.append(tuple(sorted(comp)))
    return out


def binding_table(topo: Topology) -> BindingTable:
    """Build the table. Each level lists the connected components of GPUs joined at that level or
    better; groups of one GPU and groups already listed at a better level are left out."""
    rows = tuple(
        GpuBinding(
            index=g.index,
            cores=topo.gpu_cores(g.index),
            cpus=topo.gpu_cpus(g.index),
            socket=topo.gpu_socket(g.index),
            numa_node=g.numa_node,
        )
        for g in topo.gpus
    )
    idx = [g.index for g in topo.gpus]
    groups: list[GpuGroup] = []
    for level_rank, level in enumerate(GROUP_LEVELS):

        def joined(a: int, b: int, r: int = level_rank) -> bool:
            kind = topo.link(f"GPU{a}", f"GPU{b}")
            return kind is not None and relation_rank(kind) <= r

        known = {g.gpus for g in groups}
        groups += [GpuGroup(level, c) for c in _components(idx, joined) if len(c) > 1 and c not in known]
    numa: dict[int, list[int]] = {}
    for g in topo.gpus:
        if g.numa_node is not None:
            numa.setdefault(g.numa_node, []).append(g.index)
    groups += [GpuGroup("NUMA", tuple(v)) for _k, v in sorted(numa.items()) if len(v) > 1]
    return BindingTable(rows, tuple(groups), topo.cores_per_socket, topo.threads_per_core)
