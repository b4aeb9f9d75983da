# SPDX-License-Identifier: Apache-2.0
"""The policy model: frozen dataclasses built by :mod:`slurm_gpu.policy.validate`.

Units are in the names (``_min``, ``_s``, ``_gb``, ``_mb``, ``_pct``). ``None`` means "no limit".
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class GpuType:
    name: str
    memory_gb: float
    mig_capable: bool = False
    mig_profiles: tuple[str, ...] = ()  # e.g. ("1g.10gb", "3g.40gb"); only when mig_capable
    features: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeType:
    name: str
    gpu_type: str | None
    gpus: int
    topology: str  # absolute path, resolved relative to the policy file (may not exist)
    nodes: tuple[str, ...]  # expanded node names
    features: tuple[str, ...] = ()
    hostlist: str = ""  # the hostlist as written ("h100n[1-2]")


@dataclass(frozen=True)
class Partition:
    name: str
    node_types: tuple[str, ...]
    gpu_types: tuple[str, ...] = ()  # GPU types allowed here; () = every type its nodes carry
    max_time_min: int | None = None
    default_time_min: int | None = None
    priority_tier: int = 1
    preemptible: bool = False  # => PreemptMode=REQUEUE in slurm.conf
    default: bool = False
    allowed_qos: tuple[str, ...] = ()  # () = any QOS
    default_qos: str | None = None
    grace_time_s: int = 0
    default_gpu_type: str | None = None

    def nodes(self, policy: "Policy") -> tuple[str, ...]:
        return policy.partition_nodes(self.name)


@dataclass(frozen=True)
class Qos:
    name: str
    priority: int = 0
    max_gpus_per_job: int | None = None
    max_gpus_per_user: int | None = None
    max_wall_min: int | None = None
    preempt_mode: str | None = None  # "requeue" / "cancel" / None
    preempts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Match:
    """A class's match rules; every rule that is set must hold. ``None`` / ``()`` = any."""

    min_gpus: int | None = None
    max_gpus: int | None = None
    max_time_min: int | None = None
    array: bool | None = None
    interactive: bool | None = None
    explicit: bool = False  # only chosen by ``gpusub --class NAME``
    gpu_fraction: bool | None = None  # True: only fractional-GPU requests; False: never
    gpu_types: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class JobClass:
    name: str
    partition: str
    qos: str | None = None  # None: the partition's default_qos
    match: Match = field(default_factory=Match)
    options: tuple[str, ...] = ()  # sbatch options this class adds ("--requeue")
    checkpoint_required: bool = False  # adds --requeue and --signal=B:USR1@<lead>
    description: str = ""


@dataclass(frozen=True)
class Defaults:
    cpus_per_gpu: int | str = "topology"  # a number, or "topology" (the binding planner decides)
    mem_per_gpu_mb: int | None = None
    signal_lead_time_s: int = 120
    max_requeues: int = 3
    gpu_type: str | None = None  # what an untyped GPU request becomes, if allowed
    untyped_gpus: str = "resolve"  # "resolve" (to a type) or "reject"


@dataclass(frozen=True)
class Isolation:
    """How a request for part of a GPU (``gpu_fraction``) is served."""

    fraction_mode: str = "mig-then-mps"  # "mig", "mps", "mig-then-mps", "reject"
    mig_max_fraction: float = 0.5  # fractions up to this become MIG slices (mig-then-mps)
    mig_partition: str | None = None
    mig_profiles: tuple[str, ...] = ()  # allowed profiles; () = every profile of the GPU types
    mps_partition: str | None = None
    mps_min_share_pct: int = 10
    mps_max_share_pct: int = 50


DEFAULT_MESSAGES: dict[str, str] = {
    "untyped_gpu": "untyped GPU request ({gpus} GPUs) in partition {partition}; name a GPU type",
    "unknown_gpu_type": "unknown GPU type {gpu_type!r}",
    "gpu_type_not_in_partition": "GPU type {gpu_type} is not available in partition {partition}",
    "too_many_gpus": "{gpus} GPUs exceeds QOS {qos} limit of {limit} GPUs per job",
    "over_user_cap": "{gpus} GPUs exceeds QOS {qos} per-user cap of {limit} GPUs",
    "too_long": "time limit {time} exceeds the {limit_name} limit {limit}",
    "no_class": "no job class matches this request",
    "unknown_class": "unknown job class {job_class!r}",
    "class_not_allowed": "job class {job_class} does not accept this request: {why}",
    "unknown_partition": "unknown partition {partition!r}",
    "unknown_qos": "unknown QOS {qos!r}",
    "qos_not_allowed": "QOS {qos} is not allowed in partition {partition}",
    "too_big": "{gpus} {gpu_type} GPUs do not fit partition {partition} ({capacity} GPUs)",
    "uneven_gpus": "{gpus} GPUs cannot be split evenly over {nodes} nodes of {per_node} GPUs",
    "fraction": "a GPU fraction of {fraction} cannot be served: {why}",
    "vram": "the model does not fit any GPU allocation in this policy: {why}",
    "bad_request": "invalid request: {why}",
}

MESSAGE_FIELDS: dict[str, frozenset[str]] = {
    k: frozenset(
        {"gpus", "gpu_type", "partition", "qos", "limit", "limit_name", "time", "job_class", "why",
         "capacity", "nodes", "per_node", "fraction", "user", "account"}
    )
    for k in DEFAULT_MESSAGES
}


@dataclass(frozen=True)
class Policy:
    version: int
    name: str
    gpu_types: tuple[GpuType, ...] = ()
    node_types: tuple[NodeType, ...] = ()
    partitions: tuple[Partition, ...] = ()
    qos: tuple[Qos, ...] = ()
    classes: tuple[JobClass, ...] = ()
    defaults: Defaults = field(default_factory=Defaults)
    isolation: Isolation = field(default_factory=Isolation)
    messages: tuple[tuple[str, str], ...] = ()  # site overrides of DEFAULT_MESSAGES
    source: str = ""  # absolute path of the top file
    includes: tuple[str, ...] = ()  # absolute paths of every included file
    description: str = ""

    def partition(self, name: str | None) -> Partition | None:
        return next((p for p in self.partitions if p.name == name), None)

    def qos_named(self, name: str | None) -> Qos | None:
        return next((q for q in self.qos if q.name == name), None)

    def node_type(self, name: str | None) -> NodeType | None:
        return next((n for n in self.node_types if n.name == name), None)

    def gpu_type(self, name: str | None) -> GpuType | None:
        return next((g for g in self.gpu_types if g.name == name), None)

    def job_class(self, name: str | None) -> JobClass | None:
        return next((c for c in self.classes if c.name == name), None)

    def default_partition(self) -> Partition | None:
        return next((p for p in self.partitions if p.default), None)

    def partition_nodes(self, name: str) -> tuple[str, ...]:
        part = self.partition(name)
        if part is None:
            return ()
        out: list[str] = []
        for nt_name in part.node_types:
            nt = self.node_type(nt_name)
            if nt is not None:
                out.extend(n for n in nt.nodes if n not in out)
        return tuple(out)

    def partition_gpu_types(self, name: str) -> tuple[str, ...]:
        """GPU types a job may ask for in the partition (explicit list, else those of its nodes)."""
        part = self.partition(name)
        if part is None:
            return ()
        if part.gpu_types:
            return part.gpu_types
        types: list[str] = []
        for nt_name in part.node_types:
            nt = self.node_type(nt_name)
            if nt is not None and nt.gpu_type and nt.gpu_type not in types:
                types.append(nt.gpu_type)
        return tuple(types)

    def gpu_capacity(self, partition: str, gpu_type: str) -> tuple[int, int]:
        """(GPUs of that type per node (max), total GPUs of that type) in the partition."""
        part = self.partition(partition)
        per_node, total = 0, 0
        for nt_name in part.node_types if part else ():
            nt = self.node_type(nt_name)
            if nt is not None and nt.gpu_type == gpu_type:
                per_node = max(per_node, nt.gpus)
                total += nt.gpus * len(nt.nodes)
        return per_node, total

    def message(self, key: str, **values: object) -> str:
        """The site's text for ``key`` (or the default), with ``{placeholders}`` filled."""
        template = dict(self.messages).get(key, DEFAULT_MESSAGES[key])
        try:
            return template.format(**values)
        except (KeyError, IndexError, ValueError):
            return DEFAULT_MESSAGES[key].format(**values)
