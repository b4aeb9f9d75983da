# SPDX-License-Identifier: Apache-2.0
"""slurm.conf lines from the policy: one ``NodeName=`` line per node, one ``PartitionName=`` line per
partition. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from slurm_gpu.hostlist import compress_hostlist
from slurm_gpu.policy.model import NodeType, Partition, Policy

if TYPE_CHECKING:
    from collections.abc import Callable

    from slurm_gpu.topology.model import Topology


def slurm_time(minutes: int | None) -> str:
    """Minutes -> Slurm's ``D-HH:MM:SS`` (``INFINITE`` for None)."""
    if minutes is None:
        return "INFINITE"
    d, rest = divmod(int(minutes), 24 * 60)
    h, m = divmod(rest, 60)
    return f"{d}-{h:02d}:{m:02d}:00" if d else f"{h:02d}:{m:02d}:00"


def node_features(policy: Policy, node_type: NodeType, topo: Topology | None = None) -> tuple[str, ...]:
    """A node type's ``Features=``: its GPU type, ``mig`` when the GPU type or a topology GPU is
    MIG-capable, then the node type's own features (no duplicates, in that order). Without ``topo``
    (gpusub's constraint check, which has only the policy) ``mig`` follows the GPU type alone."""
    gpu_type = policy.gpu_type(node_type.gpu_type) if node_type.gpu_type else None
    mig = bool(getattr(gpu_type, "mig_capable", False)) or (topo is not None and any(g.mig_capable for g in topo.gpus))
    out: list[str] = []
    for f in ((node_type.gpu_type,) if node_type.gpu_type else ()) + (("mig",) if mig else ()) + tuple(
            node_type.features):
        if f and f not in out:
            out.append(f)
    return tuple(out)


def node_lines(policy: Policy, topologies: Mapping[str, Topology]) -> list[tuple[str, NodeType, str]]:
    """(node name, its node type, its ``NodeName=`` line without address or port), in policy order."""
    from slurm_gpu.emit.gres_conf import shard_count, static_mig_types
    from slurm_gpu.topology.slurmconf import node_conf_line

    out = []
    for nt in policy.node_types:
        topo = topologies[nt.name]
        feats = node_features(policy, nt, topo)
        extra = {"Features": ",".join(feats)} if feats else {}
        mig = static_mig_types(nt)  # static MIG: the node's GPUs are its MIG devices, one gres type each
        for name in nt.nodes:
            line = node_conf_line(topo, name, nt.gpu_type, **extra)
            if mig:
                whole = f" Gres=gpu:{nt.gpu_type}:{len(topo.gpus)}"
                line = line.replace(whole, " Gres=" + ",".join(f"gpu:{t}:{n}" for t, n in mig), 1)
            elif shard_count(nt):  # sharding: the node's shards after its GPUs
                whole = f" Gres=gpu:{nt.gpu_type}:{len(topo.gpus)}"
                line = line.replace(whole, f"{whole},shard:{nt.gpu_type}:{shard_count(nt)}", 1)
            out.append((name, nt, line))
    return out


def job_defaults(policy: Policy, p: Partition, topologies: Mapping[str, Topology] | None) -> str | None:
    """The partition's job defaults from the policy's defaults: ``DefCpuPerGPU`` (a number, or with
    ``cpus_per_gpu: topology`` the cores local to each GPU, the least over the partition's node types)
    and ``DefMemPerGPU`` (MB). Slurm applies them to every job that gives no CPU or memory count, so a
    plain sbatch job and a gpusub job get the same resources."""
    from slurm_gpu.placement.plan import default_cpus_per_gpu, node_layout

    d = policy.defaults
    parts = []
    names = p.node_types or tuple(nt.name for nt in policy.node_types)
    layouts = [node_layout(topologies[n]) for n in names
               if topologies and n in topologies and (nt := policy.node_type(n)) is not None and nt.gpus]
    cpg = default_cpus_per_gpu(d, layouts)  # the one rule gpusub's placement plan uses too
    if cpg:
        parts.append(f"DefCpuPerGPU={cpg}")
    if d.mem_per_gpu_mb:
        parts.append(f"DefMemPerGPU={int(d.mem_per_gpu_mb)}")
    return " ".join(parts) if parts else None  # slurm.conf keys (scontrol shows them as JobDefaults=)


def partition_line(p: Partition, nodes: Sequence[str], defaults: str | None = None) -> str:
    """``PartitionName=`` with Nodes, PriorityTier, MaxTime, DefaultTime, Default, PreemptMode
    (+ GraceTime when preemptible), AllowQos, DefCpuPerGPU/DefMemPerGPU (see :func:`job_defaults`), State=UP."""
    parts = [f"PartitionName={p.name}", f"Nodes={compress_hostlist(list(nodes)) if nodes else ''}"]
    parts.append(f"PriorityTier={p.priority_tier}")
    parts.append(f"MaxTime={slurm_time(p.max_time_min)}")
    if p.default_time_min is not None:
        parts.append(f"DefaultTime={slurm_time(p.default_time_min)}")
    if p.default:
        parts.append("Default=YES")
    parts.append("PreemptMode=REQUEUE" if p.preemptible else "PreemptMode=OFF")
    if p.preemptible:
        parts.append(f"GraceTime={int(p.grace_time_s)}")
    if p.allowed_qos:
        parts.append("AllowQos=" + ",".join(p.allowed_qos))
    if defaults:
        parts.append(defaults)
    parts.append("State=UP")
    return " ".join(parts)


def partition_lines(policy: Policy, topologies: Mapping[str, Topology] | None = None,
                    nodes_of: Callable[[Partition], Sequence[str]] | None = None) -> list[str]:
    """One line per partition; ``nodes_of(partition)`` gives its node names (default: the policy's)."""
    return [partition_line(p, nodes_of(p) if nodes_of else policy.partition_nodes(p.name),
                           job_defaults(policy, p, topologies)) for p in policy.partitions]


def accounting_tres(policy: Policy) -> str:
    """``AccountingStorageTRES`` value: gres/gpu and one gres/gpu:TYPE per GPU type the nodes carry (a
    static-MIG node type: per MIG device type, ``gres/gpu:a100_3g.40gb``)."""
    from slurm_gpu.emit.gres_conf import static_mig_types

    types: dict[str, None] = {}
    for nt in policy.node_types:
        for t in [t for t, _ in static_mig_types(nt)] or ([nt.gpu_type] if nt.gpu_type else []):
            types.setdefault(t)
    return ",".join(["gres/gpu"] + [f"gres/gpu:{t}" for t in types])


def slurm_conf(policy: Policy, topologies: Mapping[str, Topology], source: str = "") -> str:
    """The policy's part of slurm.conf, for an admin to merge into the site's file."""
    from slurm_gpu.emit.gres_conf import gres_lines, gres_names

    lines = [f"# generated by slurm-gpu admin emit from {source or policy.name}: merge into slurm.conf",
             "GresTypes=" + ",".join(gres_names(gres_lines(policy, topologies))),
             f"AccountingStorageTRES={accounting_tres(policy)}"]
    if any(p.preemptible for p in policy.partitions):  # a partition's PreemptMode=REQUEUE needs these
        lines += ["PreemptType=preempt/partition_prio", "PreemptMode=REQUEUE", "JobRequeue=1"]
    lines += [line for _name, _nt, line in node_lines(policy, topologies)]
    lines += partition_lines(policy, topologies)
    return "\n".join(lines) + "\n"


__all__ = ["slurm_time", "node_features", "node_lines", "partition_line", "partition_lines", "accounting_tres",
           "slurm_conf", "job_defaults"]
