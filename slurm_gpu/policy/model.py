# SPDX-License-Identifier: Apache-2.0
"""The policy model, and the one declaration of the policy file's schema.

Each field that a policy file sets carries ``metadata=yaml(key, kind, doc)``: its YAML key, its value
kind (:mod:`slurm_gpu.policy.kinds`) and a description; its default is the dataclass default.
Validation (:mod:`slurm_gpu.policy.validate`) and the JSON Schema (:mod:`slurm_gpu.policy.schema`)
are both derived from these declarations. Enumerations are typed with ``Literal``.

Units are in the names (``_min``, ``_s``, ``_gb``, ``_mb``, ``_pct``). ``None`` means "no limit".
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Literal, get_args

from slurm_gpu.checkpoint.contract import (
    DEFAULT_GRACE_S,
    DEFAULT_KEEP,
    DEFAULT_SIGNAL,
    MAX_KEEP,
    STOP_SIGNALS,
    StopSignal,
)
from slurm_gpu.plain import Record, record
from slurm_gpu.policy.kinds import (
    Bool,
    Const,
    CpusPerGpu,
    Duration,
    Enum,
    Hostlist,
    Int,
    Limit,
    ListOf,
    MemMB,
    Messages,
    MigProfile,
    Name,
    Nested,
    Number,
    Option,
    Paths,
    Section,
    Text,
    yaml,
)

PreemptMode = Literal["requeue", "cancel"]
UntypedGpus = Literal["resolve", "reject"]
OnInternalError = Literal["accept", "reject"]
FractionMode = Literal["mig", "mps", "mig-then-mps", "reject"]
MigMode = Literal["none", "static", "dynamic"]
TopologyPluginName = Literal["tree", "block"]
NAMES = ListOf(Name(), "names")


def _names(key: str, doc: str) -> dict[str, Any]:
    return yaml(key, NAMES, doc)


@record
class GpuType(Record):
    """A GPU type (``gpu_types``)."""

    name: str = field(metadata=yaml("name", Name(), "the GPU type, as in Slurm's gres (gpu:<name>)"))
    memory_gb: float = field(metadata=yaml("memory_gb", Number(gt=0), "memory of one GPU in GB"))
    mig_capable: bool = field(default=False, metadata=yaml("mig_capable", Bool(), "can be split into MIG slices"))
    mig_profiles: tuple[str, ...] = field(default=(), metadata=yaml(
        "mig_profiles", ListOf(MigProfile(), "MIG profiles like 1g.10gb"),
        "MIG profiles offered; only when mig_capable"))
    features: tuple[str, ...] = field(default=(), metadata=_names("features", "node features of this GPU type"))


@record
class NodeType(Record):
    """A node type (``node_types``): its nodes, GPUs and topology file."""

    name: str = field(metadata=yaml("name", Name(), "the node type"))
    topology: str = field(metadata=yaml(
        "topology", Text(), "topology file, relative to the policy file (resolved to an absolute path; may not exist)"))
    nodes: tuple[str, ...] = field(metadata=yaml(
        "nodes", Hostlist(), "the nodes, as a Slurm hostlist (h100n[1-2]); stored expanded"))
    gpu_type: str | None = field(default=None, metadata=yaml("gpu_type", Name(), "GPU type of the node's GPUs"))
    gpus: int = field(default=0, metadata=yaml("gpus", Int(0), "GPUs per node"))
    features: tuple[str, ...] = field(default=(), metadata=_names("features", "Slurm node features"))
    mig_mode: MigMode = field(default="none", metadata=yaml(
        "mig_mode", Enum(get_args(MigMode)),
        "none: the hooks leave MIG alone; static: mig_layout is declared and restored after each job; "
        "dynamic: a job holding whole GPUs asks for a layout (gpusub --mig), mig_layout is restored after it"))
    mig_layout: tuple[str, ...] = field(default=(), metadata=yaml(
        "mig_layout", ListOf(MigProfile(), "MIG profiles like 1g.10gb"),
        "per GPU, one entry per MIG instance ([3g.40gb, 3g.40gb]); static: the declared layout; "
        "dynamic: the default between jobs (empty: MIG off)"))
    shards_per_gpu: int = field(default=0, metadata=yaml(
        "shards_per_gpu", Int(0), "gres/shard per GPU (Slurm 22.05+ sharding: jobs share a GPU with "
        "--gres=shard:N); 0: no shards"))
    hostlist: str = ""  # the hostlist as written ("h100n[1-2]"), from ``nodes``


@record
class Partition(Record):
    """A Slurm partition (``partitions``)."""

    name: str = field(metadata=yaml("name", Name(), "the Slurm partition"))
    node_types: tuple[str, ...] = field(metadata=_names("node_types", "node types whose nodes form the partition"))
    gpu_types: tuple[str, ...] = field(default=(), metadata=_names(
        "gpu_types", "GPU types a job may ask for here; empty: every type its nodes carry"))
    max_time_min: int | None = field(default=None, metadata=yaml("max_time", Limit(), "time limit; unset: none"))
    default_time_min: int | None = field(default=None, metadata=yaml(
        "default_time", Duration(), "time limit of jobs that give none (<= max_time)"))
    priority_tier: int = field(default=1, metadata=yaml("priority_tier", Int(0), "Slurm PriorityTier"))
    preemptible: bool = field(default=False, metadata=yaml(
        "preemptible", Bool(), "jobs can be preempted (PreemptMode=REQUEUE)"))
    grace_time_s: int = field(default=0, metadata=yaml(
        "grace_time", Duration("s"), "time between the preemption signal and the kill"))
    default: bool = field(default=False, metadata=yaml("default", Bool(), "the default partition (at most one)"))
    allowed_qos: tuple[str, ...] = field(default=(), metadata=_names("allowed_qos", "QOS allowed here; empty: any"))
    default_qos: str | None = field(default=None, metadata=yaml("default_qos", Name(), "QOS of jobs that give none"))
    default_gpu_type: str | None = field(default=None, metadata=yaml(
        "default_gpu_type", Name(), "what an untyped GPU request becomes here"))

    def nodes(self, policy: Policy) -> tuple[str, ...]:
        return policy.partition_nodes(self.name)


@record
class Qos(Record):
    """A Slurm QOS (``qos``)."""

    name: str = field(metadata=yaml("name", Name(), "the Slurm QOS"))
    priority: int = field(default=0, metadata=yaml("priority", Int(0), "QOS priority"))
    max_gpus_per_job: int | None = field(default=None, metadata=yaml("max_gpus_per_job", Int(0), "unset: none"))
    max_gpus_per_user: int | None = field(default=None, metadata=yaml("max_gpus_per_user", Int(0), "unset: none"))
    max_wall_min: int | None = field(default=None, metadata=yaml("max_wall", Limit(), "time limit; unset: none"))
    preempt_mode: PreemptMode | None = field(default=None, metadata=yaml(
        "preempt_mode", Enum(get_args(PreemptMode), (("off", None),)), "how jobs of this QOS are preempted"))
    preempts: tuple[str, ...] = field(default=(), metadata=_names("preempts", "QOS whose jobs this QOS preempts"))


@record
class Match(Record):
    """A class's match rules; every rule that is set must hold. ``None`` / ``()`` = any."""

    min_gpus: int | None = field(default=None, metadata=yaml("min_gpus", Int(0), "at least this many GPUs"))
    max_gpus: int | None = field(default=None, metadata=yaml("max_gpus", Int(0), "at most this many GPUs"))
    max_time_min: int | None = field(default=None, metadata=yaml("max_time", Duration(), "time limit at most"))
    array: bool | None = field(default=None, metadata=yaml("array", Bool(), "true: only array jobs; false: never"))
    interactive: bool | None = field(default=None, metadata=yaml(
        "interactive", Bool(), "true: only interactive sessions; false: never"))
    explicit: bool = field(default=False, metadata=yaml(
        "explicit", Bool(), "only chosen with gpusub --class NAME (or the class's partition)"))
    gpu_fraction: bool | None = field(default=None, metadata=yaml(
        "gpu_fraction", Bool(), "true: only fractional-GPU requests; false: never"))
    gpu_types: tuple[str, ...] = field(default=(), metadata=_names("gpu_types", "GPU types accepted"))
    accounts: tuple[str, ...] = field(default=(), metadata=_names("accounts", "Slurm accounts accepted"))
    users: tuple[str, ...] = field(default=(), metadata=_names("users", "users accepted"))
    groups: tuple[str, ...] = field(default=(), metadata=_names("groups", "Unix groups accepted (any one)"))


@record
class JobClass(Record):
    """A job class (``classes``): its partition, QOS, match rules and added options."""

    name: str = field(metadata=yaml("name", Name(), "the job class"))
    partition: str = field(metadata=yaml("partition", Name(), "partition of the class's jobs"))
    qos: str | None = field(default=None, metadata=yaml("qos", Name(), "QOS; unset: the partition's default_qos"))
    match: Match = field(default_factory=Match, metadata=yaml("match", Nested(Match), "rules; first match wins"))
    options: tuple[str, ...] = field(default=(), metadata=yaml(
        "options", ListOf(Option(), "sbatch options such as --requeue"), "sbatch options this class adds"))
    checkpoint_required: bool = field(default=False, metadata=yaml(
        "checkpoint_required", Bool(), "adds --requeue and --signal=B:USR1@<signal_lead_time>"))
    description: str = field(default="", metadata=yaml("description", Text(), "shown by gpusub --explain"))
    target_wait_s: int | None = field(default=None, metadata=yaml(
        "target_wait", Duration("s"), "target queue wait (report --autoscale); unset: autoscale.target_wait"))
    switches: str | None = field(default=None, metadata=yaml(
        "switches", Text(), "multi-node jobs: --switches=COUNT@MAX-WAIT (topology/tree), e.g. 1@30:00, added "
        "where a leaf switch of the partition holds the job's nodes and the user gave no --switches/--segment"))
    segment: bool = field(default=False, metadata=yaml(
        "segment", Bool(), "multi-node jobs: --segment=<nodes> (topology/block, Slurm 24.05+): the job in one "
        "block, added where a block of the partition holds the job's nodes"))


@record
class Defaults(Record):
    """Site defaults (``defaults``)."""

    cpus_per_gpu: int | Literal["topology"] = field(default="topology", metadata=yaml(
        "cpus_per_gpu", CpusPerGpu(), "a number, or topology (the binding planner decides)"))
    mem_per_gpu_mb: int | None = field(default=None, metadata=yaml("mem_per_gpu", MemMB(), "e.g. 64G"))
    signal_lead_time_s: int = field(default=120, metadata=yaml(
        "signal_lead_time", Duration("s"), "SIGUSR1 this long before the end (checkpoint_required)"))
    max_requeues: int = field(default=3, metadata=yaml("max_requeues", Int(0), "requeues of a preempted job"))
    ckpt_signal: StopSignal = field(default=DEFAULT_SIGNAL, metadata=yaml(
        "ckpt_signal", Enum(STOP_SIGNALS, tuple((f"SIG{s}", s) for s in STOP_SIGNALS)),
        "checkpoint protocol: the stop signal every process of the payload receives (NCCL jobs: USR1)"))
    ckpt_grace_s: int = field(default=DEFAULT_GRACE_S, metadata=yaml(
        "ckpt_grace", Duration("s"), "checkpoint protocol: time the payload has to save after the stop signal"))
    ckpt_keep: int = field(default=DEFAULT_KEEP, metadata=yaml(
        "ckpt_keep", Int(1, MAX_KEEP), "checkpoint protocol: complete checkpoint steps whose markers are kept"))
    gpu_type: str | None = field(default=None, metadata=yaml(
        "gpu_type", Name(), "what an untyped GPU request becomes, if allowed"))
    untyped_gpus: UntypedGpus = field(default="resolve", metadata=yaml(
        "untyped_gpus", Enum(get_args(UntypedGpus)), "resolve untyped GPU requests to a type, or reject them"))
    on_internal_error: OnInternalError = field(default="accept", metadata=yaml(
        "on_internal_error", Enum(get_args(OnInternalError)),
        "job_submit.lua: a job met by an internal error of the plugin is accepted unchanged, or rejected"))


@record
class Isolation(Record):
    """How a request for part of a GPU (``gpu_fraction``) is served."""

    fraction_mode: FractionMode = field(default="mig-then-mps", metadata=yaml(
        "fraction_mode", Enum(get_args(FractionMode)), "how a GPU fraction is served"))
    mig_max_fraction: float = field(default=0.5, metadata=yaml(
        "mig_max_fraction", Number(gt=0, le=1), "fractions up to this become MIG slices (mig-then-mps)"))
    mig_partition: str | None = field(default=None, metadata=yaml("mig_partition", Name(), "partition of MIG jobs"))
    mig_profiles: tuple[str, ...] = field(default=(), metadata=yaml(
        "mig_profiles", ListOf(MigProfile(), "MIG profiles like 1g.10gb"),
        "allowed profiles; empty: every profile of the GPU types"))
    mps_partition: str | None = field(default=None, metadata=yaml("mps_partition", Name(), "partition of MPS jobs"))
    mps_min_share_pct: int = field(default=10, metadata=yaml(
        "mps_min_share_pct", Int(1, 100), "smallest MPS share, in percent of a GPU"))
    mps_max_share_pct: int = field(default=50, metadata=yaml(
        "mps_max_share_pct", Int(1, 100), "largest MPS share, in percent of a GPU"))


@record
class Price(Record):
    """What a GPU-hour of one GPU type costs (``prices``; slurm-gpu report)."""

    name: str = field(metadata=yaml("name", Name(), "the GPU type (one of gpu_types)"))
    per_gpu_hour: float = field(metadata=yaml("per_gpu_hour", Number(gt=0), "price of one GPU for one hour"))
    currency: str = field(default="", metadata=yaml("currency", Text(), "shown after prices (EUR, USD, credits)"))


@record
class Autoscale(Record):
    """Thresholds of the scaling signal (``autoscale``; slurm-gpu report --autoscale)."""

    min_waiting_jobs: int = field(default=0, metadata=yaml(
        "min_waiting_jobs", Int(0), "scale up a GPU type when more than this many of its jobs waited longer than "
        "their class's target_wait"))
    target_wait_s: int = field(default=3600, metadata=yaml(
        "target_wait", Duration("s"), "target queue wait of classes that set none"))
    scale_down_below: float = field(default=0.7, metadata=yaml(
        "scale_down_below", Number(gt=0, le=1), "scale down a GPU type whose efficiency E stays below this"))


@record
class Switch(Record):
    """A network switch of the fabric (``fabric.switches``): a leaf names its nodes, a spine its child switches."""

    name: str = field(metadata=yaml("name", Name(), "the switch, as topology.conf's SwitchName"))
    nodes: tuple[str, ...] = field(default=(), metadata=yaml(
        "nodes", Hostlist(), "a leaf switch: its nodes, as a Slurm hostlist; stored expanded"))
    switches: tuple[str, ...] = field(default=(), metadata=_names(
        "switches", "a spine switch: the switches below it (leaves or lower spines)"))
    hostlist: str = ""  # the hostlist as written, from ``nodes``


@record
class Block(Record):
    """An NVLink/IMEX domain of the fabric (``fabric.blocks``): nodes whose GPUs share one NVLink fabric."""

    name: str = field(metadata=yaml("name", Name(), "the block, as topology.conf's BlockName"))
    nodes: tuple[str, ...] = field(metadata=yaml(
        "nodes", Hostlist(), "its nodes, as a Slurm hostlist; stored expanded"))
    hostlist: str = ""  # the hostlist as written, from ``nodes``


@record
class Fabric(Record):
    """The network between the nodes (``fabric``): a switch tree (topology/tree) and NVLink blocks
    (topology/block); ``slurm-gpu admin emit --what topology`` writes Slurm's files from it."""

    switches: tuple[Switch, ...] = field(default=(), metadata=yaml(
        "switches", Section(Switch), "leaf switches (with nodes) and spine switches (with switches)"))
    blocks: tuple[Block, ...] = field(default=(), metadata=yaml(
        "blocks", Section(Block), "NVLink/IMEX domains (GB200 NVL72 racks): each node in one block"))
    block_sizes: tuple[int, ...] = field(default=(), metadata=yaml(
        "block_sizes", ListOf(Int(1), "node counts"),
        "topology/block BlockSizes (base block size first); empty: the smallest block's node count"))
    plugin_given: TopologyPluginName | None = field(default=None, metadata=yaml(
        "plugin", Enum(get_args(TopologyPluginName)),
        "the topology plugin the cluster runs: tree (gpusub adds a class's switches) or block (its segment); "
        "unset: tree when switches are named, else block"))

    @property
    def plugin(self) -> TopologyPluginName:
        return self.plugin_given or ("tree" if self.switches else "block")

    def leaves(self) -> tuple[Switch, ...]:
        return tuple(s for s in self.switches if s.nodes)

    def leaf_of(self, node: str) -> str | None:
        return next((s.name for s in self.switches if node in s.nodes), None)

    def block_of(self, node: str) -> str | None:
        return next((b.name for b in self.blocks if node in b.nodes), None)

    @property
    def empty(self) -> bool:
        return not self.switches and not self.blocks


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
    "unservable": "no node of partition {partition} can run this job: {why}",
    "unknown_account": "account {account!r} is not one of {user}'s Slurm accounts",
}

MESSAGE_FIELDS: dict[str, frozenset[str]] = {
    k: frozenset(
        {"gpus", "gpu_type", "partition", "qos", "limit", "limit_name", "time", "job_class", "why",
         "capacity", "nodes", "per_node", "fraction", "user", "account"}
    )
    for k in DEFAULT_MESSAGES
}


@record
class Policy(Record):
    """A whole site policy: the top file with its includes merged."""

    version: int = field(metadata=yaml("version", Const(1), "the format version; required in every file"))
    name: str = field(metadata=yaml("name", Name(), "top file only; default: the file name"))
    description: str = field(default="", metadata=yaml("description", Text(), "top file only"))
    includes: tuple[str, ...] = field(default=(), metadata=yaml(
        "include", Paths(), "files loaded first, relative to this file; stored as absolute paths"))
    include_dirs: tuple[str, ...] = field(default=(), metadata=yaml(
        "include_dirs", ListOf(Text(), "absolute directories"),
        "top file only: directories outside the policy's own that includes may come from"))
    gpu_types: tuple[GpuType, ...] = field(default=(), metadata=yaml("gpu_types", Section(GpuType), "GPU types"))
    node_types: tuple[NodeType, ...] = field(default=(), metadata=yaml("node_types", Section(NodeType), "node types"))
    partitions: tuple[Partition, ...] = field(default=(), metadata=yaml(
        "partitions", Section(Partition), "Slurm partitions"))
    qos: tuple[Qos, ...] = field(default=(), metadata=yaml("qos", Section(Qos), "Slurm QOS"))
    classes: tuple[JobClass, ...] = field(default=(), metadata=yaml(
        "classes", Section(JobClass), "job classes, in order: first match wins"))
    defaults: Defaults = field(default_factory=Defaults, metadata=yaml("defaults", Nested(Defaults), "defaults"))
    isolation: Isolation = field(default_factory=Isolation, metadata=yaml(
        "isolation", Nested(Isolation), "how GPU fractions are served"))
    messages: tuple[tuple[str, str], ...] = field(default=(), metadata=yaml(
        "messages", Messages(), "site texts for rejections (overrides of DEFAULT_MESSAGES)"))
    prices: tuple[Price, ...] = field(default=(), metadata=yaml(
        "prices", Section(Price), "price per GPU-hour per GPU type (slurm-gpu report)"))
    autoscale: Autoscale = field(default_factory=Autoscale, metadata=yaml(
        "autoscale", Nested(Autoscale), "thresholds of slurm-gpu report --autoscale"))
    fabric: Fabric = field(default_factory=Fabric, metadata=yaml(
        "fabric", Nested(Fabric), "the network between nodes: switches and NVLink blocks (docs/topology.md)"))
    source: str = ""  # absolute path of the top file

    def partition(self, name: str | None) -> Partition | None:
        return next((p for p in self.partitions if p.name == name), None)

    def qos_named(self, name: str | None) -> Qos | None:
        return next((q for q in self.qos if q.name == name), None)

    def node_type(self, name: str | None) -> NodeType | None:
        return next((n for n in self.node_types if n.name == name), None)

    def gpu_type(self, name: str | None) -> GpuType | None:
        return next((g for g in self.gpu_types if g.name == name), None)

    def mig_type(self, name: str | None) -> tuple[str, str, int] | None:
        """(GPU type, profile, slices) when ``name`` is a MIG slice's gres type as Slurm and gpusub name
        it, ``<type>_<profile>`` (``a100_1g.10gb``), of a MIG-capable type that offers the profile."""
        if not name or "_" not in name:
            return None
        base, _, prof = name.partition("_")
        g = self.gpu_type(base)
        if g is None or not g.mig_capable or prof not in g.mig_profiles:
            return None
        return base, prof, int(prof.split("g.", 1)[0])

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
