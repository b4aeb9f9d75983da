# SPDX-License-Identifier: Apache-2.0
"""LabSpec: everything the config generator needs, as plain data.

``spec_from_policy`` is the one place that reads the policy and topology objects; the generator in
:mod:`slurm_gpu.lab.config` only sees the dataclasses below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from slurm_gpu.policy.model import Qos

DEFAULT_USER = "labuser"
DEFAULT_ACCOUNT = "lab"
DEFAULT_CLUSTER = "lab"


@dataclass(frozen=True)
class LabNode:
    """One emulated node. ``conf_line`` is its slurm.conf NodeName line without address or port."""

    name: str
    node_type: str
    gpu_type: str | None
    gpus: int
    features: tuple[str, ...]
    conf_line: str


@dataclass(frozen=True)
class LabPartition:
    name: str
    nodes: tuple[str, ...]
    priority_tier: int = 1
    max_time_min: int | None = None
    default_time_min: int | None = None
    default: bool = False
    preemptible: bool = False
    grace_time_s: int = 0
    allowed_qos: tuple[str, ...] = ()


# The lab's QOS are the policy's, unchanged (one model; the config generator reads the same fields).
LabQos = Qos


@dataclass(frozen=True)
class LabHooks:
    """Optional paths to wire into slurm.conf. ``None`` leaves the key unset (no placeholders)."""

    job_submit_lua: str | None = None
    prolog: str | None = None
    epilog: str | None = None
    task_prolog: str | None = None


@dataclass(frozen=True)
class LabSpec:
    nodes: tuple[LabNode, ...]
    gres_lines: tuple[str, ...]  # gres.conf lines after AutoDetect=off
    partitions: tuple[LabPartition, ...]
    qos: tuple[LabQos, ...]
    gpu_types: tuple[str, ...]
    cluster: str = DEFAULT_CLUSTER
    account: str = DEFAULT_ACCOUNT  # every lab user's default account
    extra_accounts: tuple[str, ...] = ()  # accounts the policy's classes match on; lab users belong to them too
    users: tuple[str, ...] = ("root", DEFAULT_USER)
    default_qos: str = "normal"
    policy_path: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes)

    def max_gpus_per_node(self) -> int:
        return max((n.gpus for n in self.nodes), default=0)


def _features(node_type: Any, gpu_type: Any, topo: Any) -> tuple[str, ...]:
    mig = bool(getattr(gpu_type, "mig_capable", False)) or any(g.mig_capable for g in topo.gpus)
    out: list[str] = []
    for f in (
        ((node_type.gpu_type,) if node_type.gpu_type else ()) + (("mig",) if mig else ()) + tuple(node_type.features)
    ):
        if f and f not in out:
            out.append(f)
    return tuple(out)


def spec_from_policy(policy: Any, load_topology: Any, device_dir: str = "/dev") -> LabSpec:
    """Build the LabSpec from a loaded Policy; ``load_topology(path)`` returns a Topology."""
    from slurm_gpu.hostlist import compress_hostlist
    from slurm_gpu.topology.slurmconf import gres_conf_lines, node_conf_line

    nodes: list[LabNode] = []
    gres: list[str] = []
    for nt in policy.node_types:
        topo = load_topology(nt.topology)
        feats = _features(nt, policy.gpu_type(nt.gpu_type) if nt.gpu_type else None, topo)
        extra = {"Features": ",".join(feats)} if feats else {}
        for name in nt.nodes:
            line = node_conf_line(topo, name, nt.gpu_type, **extra)
            nodes.append(LabNode(name, nt.name, nt.gpu_type, nt.gpus, feats, line))
        if nt.gpu_type and nt.gpus:
            gres.extend(gres_conf_lines(topo, compress_hostlist(list(nt.nodes)), nt.gpu_type, device_dir))
    by_type = {nt.name: tuple(nt.nodes) for nt in policy.node_types}
    parts = []
    for p in policy.partitions:
        pnodes = tuple(n for t in p.node_types for n in by_type.get(t, ()))
        parts.append(
            LabPartition(
                name=p.name,
                nodes=pnodes,
                priority_tier=p.priority_tier,
                max_time_min=p.max_time_min,
                default_time_min=p.default_time_min,
                default=p.default,
                preemptible=p.preemptible,
                grace_time_s=p.grace_time_s,
                allowed_qos=tuple(p.allowed_qos),
            )
        )
    qos = tuple(policy.qos)
    names = [q.name for q in qos]
    default_qos = "normal" if "normal" in names or not names else names[0]
    gpu_types = tuple(dict.fromkeys(nt.gpu_type for nt in policy.node_types if nt.gpu_type))
    accounts = tuple(dict.fromkeys(a for c in getattr(policy, "classes", ()) for a in c.match.accounts))
    return LabSpec(
        nodes=tuple(nodes),
        gres_lines=tuple(gres),
        partitions=tuple(parts),
        qos=qos,
        gpu_types=gpu_types,
        default_qos=default_qos,
        extra_accounts=tuple(a for a in accounts if a != DEFAULT_ACCOUNT),
        policy_path=str(getattr(policy, "source", "") or "") or None,
    )
