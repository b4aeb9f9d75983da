# SPDX-License-Identifier: Apache-2.0
"""Topologies for the pinning tests: the lab's node types and a DGX A100 (NPS4, SMT) capture."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_gpu.placement.pinning import Locality, locality_from_topology
from slurm_gpu.topology.loader import load_topology_file
from slurm_gpu.topology.lscpu import parse_lscpu
from slurm_gpu.topology.nvidia_smi import topology_from_nvidia_smi

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"


def _load(name: str) -> Locality:
    if name == "dgx":
        topo = topology_from_nvidia_smi((DATA / "dgx-a100-epyc7742-nps4.nvidia-smi-topo.txt").read_text(),
                                        parse_lscpu((DATA / "dgx-a100-epyc7742.lscpu.txt").read_text()))
    else:
        topo = load_topology_file(ROOT / "examples" / "topology" / f"{name}.yaml")
    return locality_from_topology(topo)


_CACHE: dict[str, Locality] = {}


def locality(name: str) -> Locality:
    if name not in _CACHE:
        _CACHE[name] = _load(name)
    return _CACHE[name]


@pytest.fixture(scope="session")
def h100() -> Locality:
    return locality("h100x8")


@pytest.fixture(scope="session")
def a100() -> Locality:
    return locality("a100x4")


@pytest.fixture(scope="session")
def dgx() -> Locality:
    return locality("dgx")
