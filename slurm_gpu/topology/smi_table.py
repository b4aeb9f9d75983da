# SPDX-License-Identifier: Apache-2.0
"""The table ``nvidia-smi topo -m`` prints, as records (pure): what :mod:`~slurm_gpu.topology.nvidia_smi`
parses and :mod:`~slurm_gpu.topology.infer` checks against lscpu (so that neither imports the other's
records)."""

from __future__ import annotations

from dataclasses import field

from slurm_gpu.plain import Record, record
from slurm_gpu.topology.model import Link


@record
class SmiGpu(Record):
    """One GPU row: its affinity columns as printed (None = N/A or column absent). ``numa_nodes``
    is the whole ``NUMA Affinity`` list (Grace nodes print several); ``numa_node`` its first id."""

    index: int
    line: int
    cpus: tuple[int, ...] | None
    numa_nodes: tuple[int, ...] | None
    gpu_numa_ids: tuple[int, ...] | None

    @property
    def numa_node(self) -> int | None:
        return self.numa_nodes[0] if self.numa_nodes else None

    @property
    def gpu_numa_id(self) -> int | None:
        return self.gpu_numa_ids[0] if self.gpu_numa_ids else None


@record
class SmiTable(Record):
    devices: tuple[str, ...]  # canonical labels in column order: GPU<i>, NIC<k>
    gpus: tuple[SmiGpu, ...]
    links: tuple[Link, ...]
    nic_names: dict[str, str] = field(default_factory=dict)  # NIC<k> -> mlx5_0
    notes: tuple[str, ...] = ()


__all__ = ["SmiGpu", "SmiTable"]
