# SPDX-License-Identifier: Apache-2.0
"""``scontrol show topology``: its lines as typed records. Pure.

22.05.8 (topology/tree, measured): ``SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=a100n[1-2]`` and for a
spine ``SwitchName=spine Level=1 LinkSpeed=1 Nodes=a100n[1-4] Switches=leaf1,leaf2`` (a spine lists
every node below it). topology/block (24.11.5, measured): ``BlockName=nvl1 BlockIndex=0 Nodes=a100n[1-2]
BlockSize=2`` per base block and ``AggregatedBlock=nvl[1-2] BlockIndex=2 Nodes=a100n[1-4] BlockSize=4`` per
aggregate (kind ``aggregate``). Keys not known here are kept in ``fields``."""

from __future__ import annotations

from slurm_gpu.hostlist import expand_hostlist
from slurm_gpu.plain import NamedTuple


class TopologyUnit(NamedTuple):
    """One switch or block as slurmctld holds it."""

    kind: str  # "switch", "block" or "aggregate"
    name: str
    nodes: tuple[str, ...]
    switches: tuple[str, ...]
    level: int | None
    fields: tuple[tuple[str, str], ...]


_KINDS = {"SwitchName": "switch", "BlockName": "block", "AggregatedBlock": "aggregate"}


def parse_show_topology(text: str) -> tuple[TopologyUnit, ...]:
    """Every ``SwitchName=``/``BlockName=`` line of ``scontrol show topology`` (other lines skipped)."""
    out = []
    for line in (text or "").splitlines():
        words = dict(w.split("=", 1) for w in line.split() if "=" in w)
        key = next((k for k in _KINDS if k in words), None)
        if key is None:
            continue
        nodes = words.get("Nodes", "")
        try:
            names = tuple(expand_hostlist(nodes)) if nodes and nodes != "(null)" else ()
        except ValueError:
            names = ()
        level = words.get("Level", "")
        kids = words.get("Switches", "")
        try:
            below = tuple(expand_hostlist(kids)) if kids and kids != "(null)" else ()
        except ValueError:
            below = ()
        out.append(TopologyUnit(_KINDS[key], words[key], names, below,
                                int(level) if level.isascii() and level.isdigit() else None,
                                tuple(sorted(words.items()))))
    return tuple(out)


__all__ = ["TopologyUnit", "parse_show_topology"]
