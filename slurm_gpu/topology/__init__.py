# SPDX-License-Identifier: Apache-2.0
"""Node topology: parsers (nvidia-smi topo -m, lscpu, hwloc XML), the model, and Slurm outputs.

Owns: the Topology model (``model``, ``model_json``), its parsers (``nvidia_smi``, ``smi_table``, ``lscpu``,
``hwloc``, ``infer``), descriptors (``loader``, an edge: it reads the files), gres.conf views
(``slurmconf``, ``binding_table``) and the picture (``draw``).
May import: the ground floor (GROUND in tests/test_layers.py) (its edge also the adapters).
"""

from __future__ import annotations

from slurm_gpu.topology.loader import load_topology_file
from slurm_gpu.topology.model import Cpu, Gpu, Link, Nic, NumaNode, Topology
from slurm_gpu.topology.model_json import topology_from_json

__all__ = ["Cpu", "Gpu", "Link", "Nic", "NumaNode", "Topology", "load_topology_file", "topology_from_json"]
