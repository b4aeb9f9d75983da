# SPDX-License-Identifier: Apache-2.0
"""Read the live cluster's partitions, QOS and GPU types (for ``slurm-gpu policy check``).

Commands: ``scontrol show partition -o``, ``sacctmgr -nP show qos format=name``, ``sinfo -h -o %G``,
each through the one runner under a short timeout; an unreachable Slurm gives None, never an exception.
"""

from __future__ import annotations

import os
import re

from slurm_gpu.adapters.slurm.runner import run_slurm
from slurm_gpu.errors import SlurmGpuError
from slurm_gpu.plain import Record, record
from slurm_gpu.slurm.records import NodeRecord

TIMEOUT_S = 3.0


@record
class LiveInventory(Record):
    partitions: tuple[str, ...]
    qos: tuple[str, ...] | None  # None: accounting (slurmdbd) not reachable
    gpu_types: tuple[str, ...]


def _out(argv: list[str], timeout_s: float) -> str | None:
    try:
        r = run_slurm(argv, timeout_s=timeout_s)
    except SlurmGpuError:
        return None
    return r.stdout if r.returncode == 0 else None


def parse_partitions(text: str) -> tuple[str, ...]:
    """``scontrol show partition -o`` lines -> partition names."""
    return tuple(m.group(1) for m in re.finditer(r"^PartitionName=(\S+)", text, re.M))


def parse_gres_types(text: str) -> tuple[str, ...]:
    """``sinfo -h -o %G`` lines (``gpu:h100:8(S:0-1),gpu:a100_1g.10gb:2``) -> GPU type names."""
    types: list[str] = []
    for line in text.splitlines():
        for item in re.split(r",(?![^()]*\))", line.strip()):
            parts = re.sub(r"\(.*\)$", "", item).split(":")
            if len(parts) >= 3 and parts[0] == "gpu" and parts[1] not in types:
                types.append(parts[1])
    return tuple(types)


def live_node_records(timeout_s: float = TIMEOUT_S) -> tuple[NodeRecord, ...] | None:
    """``scontrol show node -o``'s nodes, or None when Slurm does not answer."""
    from slurm_gpu.slurm.records import read_node_records

    text = _out(["scontrol", "show", "node", "-o"], timeout_s)
    return None if text is None else read_node_records(text).nodes


def live_inventory(timeout_s: float = TIMEOUT_S, require_slurm_conf: bool = True) -> LiveInventory | None:
    """The live inventory, or None when Slurm is not reachable (SLURM_CONF unset or no answer)."""
    conf = os.environ.get("SLURM_CONF")
    if require_slurm_conf and not (conf and os.path.isfile(conf)):
        return None
    parts = _out(["scontrol", "show", "partition", "-o"], timeout_s)
    if parts is None:
        return None
    qos = _out(["sacctmgr", "-nP", "show", "qos", "format=name"], timeout_s)
    gres = _out(["sinfo", "-h", "-o", "%G"], timeout_s) or ""
    return LiveInventory(parse_partitions(parts),
                         None if qos is None else tuple(q.strip() for q in qos.splitlines() if q.strip()),
                         parse_gres_types(gres))
