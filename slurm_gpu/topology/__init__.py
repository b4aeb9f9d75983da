# SPDX-License-Identifier: Apache-2.0
"""Node topology: parsers (nvidia-smi topo -m, lscpu, hwloc XML), the model, and Slurm outputs."""

from __future__ import annotations

from slurm_gpu.topology.loader import load_topology_file
from slurm_gpu.topology.model import Cpu, Gpu, Link, Nic, NumaNode, Topology
from slurm_gpu.topology.model_json import topology_from_json

__all__ = ["Cpu", "Gpu", "Link", "Nic", "NumaNode", "Topology", "load_topology_file", "topology_from_json"]
