# SPDX-License-Identifier: Apache-2.0
"""What the cluster's nodes offer, as the classifier reads it (pure): one :class:`NodeOffer` per node with
its partitions, features, gres (GPU types and counts, shards, MPS) and, when known, its CPUs and memory.

Two sources give the same record: :func:`policy_inventory` (the nodes as ``slurm-gpu admin emit``
renders them from the policy: ``Features=`` and ``Gres=``; CPUs and memory unknown) and
:func:`records_inventory` (the live cluster's ``scontrol show node`` records, which an edge reads:
gpusub through its Slurm backend, ``slurm-gpu policy check`` through the live inventory). The classifier's
``check_nodes`` step and its type resolution read only this record, never Slurm.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from slurm_gpu.plain import NamedTuple

if TYPE_CHECKING:
    from slurm_gpu.policy.model import NodeType, Policy
    from slurm_gpu.slurm.records import NodeRecord


UNKNOWN_COUNT = 1 << 30  # the count of a gres the source does not know: never refused for it


class NodeOffer(NamedTuple):
    name: str
    partitions: tuple[str, ...]
    features: frozenset[str]
    gres: tuple[tuple[str, str | None, int], ...]  # (gpu|shard|mps, type or None, count per node)
    cpus: int | None = None
    memory_mb: int | None = None
    # the node's GPU type when its MIG slices are not known (a MIG-capable type in a node type without a
    # static layout, from the policy alone: Slurm's NVML detection may find slices the policy does not name)
    mig_unknown: str | None = None
    unknown: frozenset[str] = frozenset()  # gres the source does not know (the policy: mps, which emit never writes)

    def count(self, name: str, gtype: str | None = None) -> int:
        """This node's count of gres ``name`` (of ``gtype``; None: of every type)."""
        if name == "gpu" and gtype and self.mig_unknown and gtype.startswith(self.mig_unknown + "_"):
            return 7 * self.count("gpu", self.mig_unknown)  # not known: not refused
        if name in self.unknown:
            return UNKNOWN_COUNT
        return sum(n for g, t, n in self.gres if g == name and (gtype is None or t == gtype))


class Inventory(NamedTuple):
    nodes: tuple[NodeOffer, ...]
    source: str  # "policy" (what admin emit renders) or "cluster" (scontrol show node)
    accounts: frozenset[str] | None = None  # the user's Slurm accounts (sacctmgr), when known

    def in_partition(self, partition: str) -> tuple[NodeOffer, ...]:
        return tuple(n for n in self.nodes if partition in n.partitions)

    def gpu_types(self) -> tuple[str, ...]:
        out: list[str] = []
        for n in self.nodes:
            out.extend(t for g, t, _c in n.gres if g == "gpu" and t and t not in out)
        return tuple(out)


def node_type_features(policy: Policy, node_type: NodeType) -> tuple[str, ...]:
    """A node type's ``Features=`` as admin emit writes them without a topology (emit.slurm_conf
    node_features): its GPU type, ``mig`` when the GPU type is MIG-capable, then its own features."""
    gpu_type = policy.gpu_type(node_type.gpu_type) if node_type.gpu_type else None
    out: list[str] = []
    for f in ((node_type.gpu_type,) if node_type.gpu_type else ()) + (
            ("mig",) if getattr(gpu_type, "mig_capable", False) else ()) + tuple(node_type.features):
        if f and f not in out:
            out.append(f)
    return tuple(out)


def node_type_gres(node_type: NodeType) -> tuple[tuple[str, str | None, int], ...]:
    """A node type's ``Gres=`` as admin emit writes it (emit.slurm_conf node_lines): static MIG slices,
    one gres type each, else its whole GPUs and, with sharding, its shards."""
    t, n = node_type.gpu_type, node_type.gpus
    if not t or n <= 0:
        return ()
    if node_type.mig_mode == "static" and node_type.mig_layout:
        counts: dict[str, int] = {}
        for prof in node_type.mig_layout:
            counts[f"{t}_{prof}"] = counts.get(f"{t}_{prof}", 0) + n
        return tuple(("gpu", k, v) for k, v in counts.items())
    out: list[tuple[str, str | None, int]] = [("gpu", t, n)]
    if node_type.shards_per_gpu:
        out.append(("shard", t, node_type.shards_per_gpu * n))
    return tuple(out)


def policy_inventory(policy: Policy) -> Inventory:
    """The policy's nodes, as admin emit renders them."""
    nodes: list[NodeOffer] = []
    seen: set[str] = set()
    for nt in policy.node_types:
        parts = tuple(p.name for p in policy.partitions if nt.name in p.node_types)
        feats = frozenset(node_type_features(policy, nt))
        gres = node_type_gres(nt)
        g = policy.gpu_type(nt.gpu_type) if nt.gpu_type else None
        unknown = nt.gpu_type if g is not None and g.mig_capable and nt.mig_mode != "static" else None
        for name in nt.nodes:
            if name not in seen:
                seen.add(name)
                nodes.append(NodeOffer(name, parts, feats, gres, mig_unknown=unknown,
                                       unknown=frozenset({"mps"}) if gres else frozenset()))
    return Inventory(tuple(nodes), "policy")


def records_inventory(records: Iterable[NodeRecord]) -> Inventory:
    """The live cluster's nodes (``scontrol show node -o`` records, slurm.records.NodeRecord)."""
    nodes = tuple(NodeOffer(r.name, tuple(r.partitions), frozenset(r.features),
                            tuple((g.name, g.gres_type, g.count) for g in r.gres),
                            r.cpus or None, r.memory_mb or None) for r in records)
    return Inventory(nodes, "cluster")


def describe(nodes: Sequence[NodeOffer], limit: int = 4) -> str:
    """``a100n1 (gpu:a100:4; features a100,mig)``: what the first nodes (by name: the policy's and the
    cluster's order differ) offer, for a reason."""
    parts = []
    for n in sorted(nodes, key=lambda n: n.name)[:limit]:
        gres = ",".join(f"{g}:{t}:{c}" if t else f"{g}:{c}" for g, t, c in n.gres) or "no gres"
        parts.append(f"{n.name} ({gres}; features {','.join(sorted(n.features)) or 'none'})")
    more = f" and {len(nodes) - limit} more" if len(nodes) > limit else ""
    return ", ".join(parts) + more if parts else "no node"


__all__ = ["NodeOffer", "Inventory", "policy_inventory", "records_inventory", "node_type_features",
           "node_type_gres", "describe"]
