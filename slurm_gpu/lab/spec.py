# SPDX-License-Identifier: Apache-2.0
"""LabSpec: everything the lab's config generator needs, as plain data.

``spec_from_policy`` reads the policy and its topologies through the emitter (:mod:`slurm_gpu.emit`),
so node, gres and partition lines are the ones ``slurm-gpu admin emit`` prints for a real cluster;
partitions and QOS are the policy's own objects.
"""

from __future__ import annotations

from dataclasses import field, replace
from typing import Any

from slurm_gpu.lab.nvmlnode import detected_type_name
from slurm_gpu.plain import Record, record
from slurm_gpu.policy.model import Partition, Qos
from slurm_gpu.sharing.mig import detected_profile

DEFAULT_USER = "labuser"
DEFAULT_ACCOUNT = "lab"
DEFAULT_CLUSTER = "lab"


@record
class LabNode(Record):
    """One emulated node. ``conf_line`` is its slurm.conf NodeName line without address or port."""

    name: str
    node_type: str
    gpu_type: str | None
    gpus: int
    features: tuple[str, ...]
    conf_line: str
    # static MIG (the policy's mig_mode: static): the per-GPU layout, and the topology file the node's
    # stand-in NVML state is built from, so that slurmd can detect the slices (AutoDetect=nvml)
    mig_layout: tuple[str, ...] = ()
    topology: str = ""
    gpu_memory_gb: int = 0  # the GPU type's memory: what names a detected MIG slice on some releases
    mig_mode: str = "none"  # the node type's: none, static (mig_layout) or dynamic (per-job layouts)
    gpu_name: str = ""  # the recorded machine's NVML name of its GPUs (the topology's), "" when not recorded


# The lab's QOS are the policy's, unchanged (one model; the config generator reads the same fields).
LabQos = Qos


@record
class LabHooks(Record):
    """Optional paths to wire into slurm.conf. ``None`` leaves the key unset (no placeholders).

    ``job_submit_policy``: compile the lab's own policy copy into ``job_submit.lua``
    (:func:`slurm_gpu.emit.job_submit.compile_policy`; ``default_hooks`` turns it on). An explicit
    ``job_submit_lua`` file wins over it."""

    job_submit_lua: str | None = None
    job_submit_policy: bool = False
    prolog: str | None = None
    epilog: str | None = None
    task_prolog: str | None = None
    epilog_slurmctld: str | None = None  # EpilogSlurmctld= (slurmctld reads it only when it starts)
    node_hooks: bool = False  # install slurm-gpu's own Prolog/Epilog/TaskProlog (slurm_gpu/lab/nodehooks.py)
    prolog_alloc: bool = False  # PrologFlags=Alloc with a Prolog/Epilog (False: the Prolog runs at the first step)
    # the stand-in NVIDIA driver (NVML state of the recorded machine) on the nodes that serve per-job MIG
    # layouts (mig_mode dynamic), so that the hooks can: lab/control.py _give_drivers
    drivers: bool = False

    @property
    def job_submit(self) -> str | None:
        """Where the lab's job_submit.lua comes from: the explicit file, "policy", or None (no plugin)."""
        return self.job_submit_lua or ("policy" if self.job_submit_policy else None)


@record
class LabSpec(Record):
    nodes: tuple[LabNode, ...]
    gres_lines: tuple[str, ...]  # gres.conf lines after AutoDetect=off
    partitions: tuple[Partition, ...]  # the policy's, unchanged
    qos: tuple[LabQos, ...]
    gpu_types: tuple[str, ...]
    cluster: str = DEFAULT_CLUSTER
    account: str = DEFAULT_ACCOUNT  # every lab user's default account
    extra_accounts: tuple[str, ...] = ()  # accounts the policy's classes match on; lab users belong to them too
    users: tuple[str, ...] = ("root", DEFAULT_USER)
    default_qos: str = "normal"
    policy_path: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    partition_lines: tuple[str, ...] = ()  # emitted PartitionName= lines (with JobDefaults from the policy)
    fabric: Any = None  # the policy's Fabric (slurm_gpu.policy.model): a topology file when it names switches/blocks
    topology_plugin: str | None = None  # tree / block; None: block where the fabric has blocks and Slurm the plugin

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes)

    def partition_nodes(self, p: Partition) -> tuple[str, ...]:
        """The lab nodes of a partition: those of its node types, in the partition's order."""
        return tuple(n.name for t in p.node_types for n in self.nodes if n.node_type == t)

    @property
    def static_mig_nodes(self) -> tuple[LabNode, ...]:
        """The nodes whose GPUs are static MIG slices (slurmd detects them over the stand-in, when it can)."""
        return tuple(n for n in self.nodes if n.mig_layout)

    @property
    def dynamic_mig_nodes(self) -> tuple[LabNode, ...]:
        """The nodes that serve per-job MIG layouts on whole GPUs (the hooks make them: they need a driver)."""
        return tuple(n for n in self.nodes if n.mig_mode == "dynamic" and n.gpus)

    def max_gpus_per_node(self) -> int:
        return max((n.gpus for n in self.nodes), default=0)


def _memory_gb(policy: Any, gpu_type: str | None) -> int:
    g = policy.gpu_type(gpu_type) if gpu_type else None
    return int(g.memory_gb) if g is not None else 0


def detected_alike(node: LabNode, from_attributes: bool) -> bool:
    """Whether Slurm's gpu/nvml names every slice of ``node``'s layout as the policy does (release.py
    ``mig_profile_from_attributes``: 22.05 names the A100 80GB's 3g.40gb ``3g.39gb``, so slurm.conf's
    gpu:a100_3g.40gb would not match what slurmd detects and the node would be INVAL)."""
    return all(detected_profile(node.gpu_type or "", node.gpu_memory_gb, p, from_attributes) == p
               for p in dict.fromkeys(node.mig_layout))


def _gpu_name(topo: Any) -> str:
    gpus = getattr(topo, "gpus", ())
    return str(gpus[0].name or "") if gpus else ""


def whole_gpus_detected_alike(node: LabNode) -> bool:
    """Whether Slurm's gpu/nvml would register ``node``'s whole GPUs under the policy's type: the type Slurm
    gives a detected GPU is its NVML name, lower-cased, spaces as ``_`` (``NVIDIA H100 80GB HBM3`` ->
    ``nvidia_h100_80gb_hbm3``), and slurm.conf's type must be a substring of it (docs/topology.md
    "Type names"). A node of no recorded GPU name, or with static MIG slices, is not one."""
    return bool(node.gpus and node.gpu_type and node.gpu_name and not node.mig_layout
                and node.gpu_type.lower() in detected_type_name(node.gpu_name))


def spec_from_policy(policy: Any, load_topology: Any, device_dir: str = "/dev") -> LabSpec:
    """Build the LabSpec from a loaded Policy; ``load_topology(path)`` returns a Topology."""
    from slurm_gpu.emit.gres_conf import gres_lines
    from slurm_gpu.emit.slurm_conf import node_features, node_lines, partition_lines

    topologies = {nt.name: load_topology(nt.topology) for nt in policy.node_types}
    nodes = [LabNode(name, nt.name, nt.gpu_type, nt.gpus, node_features(policy, nt, topologies[nt.name]), line,
                     tuple(nt.mig_layout) if nt.mig_mode == "static" else (), str(nt.topology),
                     _memory_gb(policy, nt.gpu_type), nt.mig_mode, _gpu_name(topologies[nt.name]))
             for name, nt, line in node_lines(policy, topologies)]
    gres = gres_lines(policy, topologies, device_dir)
    qos = tuple(policy.qos)
    names = [q.name for q in qos]
    default_qos = "normal" if "normal" in names or not names else names[0]
    gpu_types = tuple(dict.fromkeys(nt.gpu_type for nt in policy.node_types if nt.gpu_type))
    accounts = tuple(dict.fromkeys(a for c in getattr(policy, "classes", ()) for a in c.match.accounts))
    spec = LabSpec(
        nodes=tuple(nodes),
        gres_lines=tuple(gres),
        partitions=tuple(policy.partitions),
        qos=qos,
        gpu_types=gpu_types,
        default_qos=default_qos,
        extra_accounts=tuple(a for a in accounts if a != DEFAULT_ACCOUNT),
        policy_path=str(getattr(policy, "source", "") or "") or None,
        fabric=getattr(policy, "fabric", None),
    )
    lines = partition_lines(policy, topologies, nodes_of=spec.partition_nodes)
    return replace(spec, partition_lines=tuple(lines))
