# SPDX-License-Identifier: Apache-2.0
"""The simulated cluster: the policy's nodes with their GPUs, and allocation now.

Nodes and GPUs come from the policy's node types (``nodes`` x ``gpus`` of ``gpu_type``); a partition
is the nodes of its node types. Whole GPUs are counted per node. A MIG job takes ``slices`` of 7 of
one GPU: slices are packed onto a GPU that is already split (the fullest that still fits), else a
whole free GPU is split; a split GPU whose slices are all free again is whole again. CPUs and memory
are not modelled (GPU jobs are bound by GPUs). Node choice is best fit: the nodes with the fewest
free GPUs that still fit the job, then the node order of the policy.
"""

from __future__ import annotations

from slurm_gpu.policy.model import Policy

MIG_SLICES = 7

# An allocation: ((node, whole GPUs, split-GPU slot or -1, slices), ...)
Alloc = tuple[tuple[int, int, int, int], ...]


class Cluster:
    """GPUs per node, free now. Pure state: the engine changes it through allocate/release."""

    __slots__ = ("names", "gpu_types", "total", "free", "slots", "_next_slot", "_groups", "policy")

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.names: list[str] = []
        self.gpu_types: list[str | None] = []
        self.total: list[int] = []
        index: dict[str, int] = {}
        for nt in policy.node_types:
            for name in nt.nodes:
                if name in index:
                    continue
                index[name] = len(self.names)
                self.names.append(name)
                self.gpu_types.append(nt.gpu_type)
                self.total.append(nt.gpus)
        self.free = list(self.total)
        self.slots: list[dict[int, int]] = [{} for _ in self.names]  # split GPUs: slot -> free slices
        self._next_slot = 0
        self._groups: dict[tuple[str, str | None], tuple[int, ...]] = {}
        for part in policy.partitions:
            members = [index[n] for n in policy.partition_nodes(part.name) if n in index]
            self._groups[(part.name, None)] = tuple(members)
            for t in {self.gpu_types[i] for i in members}:
                self._groups[(part.name, t)] = tuple(i for i in members if self.gpu_types[i] == t)

    @property
    def gpus(self) -> int:
        return sum(self.total)

    def group(self, partition: str, gpu_type: str | None) -> tuple[int, ...]:
        """The nodes a job of the partition and GPU type may use."""
        return self._groups.get((partition, gpu_type), ())

    def pick(self, group: tuple[int, ...], nodes: int, per_node: int, slices: int = 0,
             allowed: frozenset[int] | None = None) -> list[int] | None:
        """Best-fit nodes for the job now (only among ``allowed`` when given), or None."""
        free, slots = self.free, self.slots
        if slices:
            best: tuple[int, int, int] | None = None
            for i in group:
                if allowed is not None and i not in allowed:
                    continue
                packed = [f for f in slots[i].values() if f >= slices]
                key = (0, min(packed), i) if packed else (1, free[i], i)
                if (packed or free[i]) and (best is None or key < best):
                    best = key
            return None if best is None else [best[2]]
        if nodes == 1:
            pick = -1
            low = 1 << 30
            for i in group:
                f = free[i]
                if per_node <= f < low and (allowed is None or i in allowed):
                    pick, low = i, f
                    if f == per_node:
                        break
            return None if pick < 0 else [pick]
        fits = [(free[i], i) for i in group if free[i] >= per_node and (allowed is None or i in allowed)]
        if len(fits) < nodes:
            return None
        fits.sort()
        return [i for _, i in fits[:nodes]]

    def allocate(self, chosen: list[int], per_node: int, slices: int = 0) -> Alloc:
        if slices:
            i = chosen[0]
            packed = [(f, s) for s, f in self.slots[i].items() if f >= slices]
            if packed:
                _, slot = min(packed)
                self.slots[i][slot] -= slices
            else:
                self.free[i] -= 1
                slot = self._next_slot
                self._next_slot += 1
                self.slots[i][slot] = MIG_SLICES - slices
            return ((i, 0, slot, slices),)
        for i in chosen:
            self.free[i] -= per_node
        return tuple((i, per_node, -1, 0) for i in chosen)

    def release(self, alloc: Alloc) -> None:
        for i, whole, slot, slices in alloc:
            self.free[i] += whole
            if slot >= 0:
                left = self.slots[i][slot] + slices
                if left >= MIG_SLICES:
                    del self.slots[i][slot]
                    self.free[i] += 1
                else:
                    self.slots[i][slot] = left

    def take(self, alloc: Alloc) -> None:
        """Apply an allocation again (undoes :meth:`release`)."""
        for i, whole, slot, slices in alloc:
            self.free[i] -= whole
            if slot >= 0:
                if slot in self.slots[i]:
                    self.slots[i][slot] -= slices
                else:
                    self.free[i] -= 1
                    self.slots[i][slot] = MIG_SLICES - slices

    def used_gpus(self) -> int:
        """GPUs in use now (a split GPU counts whole)."""
        return sum(self.total) - sum(self.free)
