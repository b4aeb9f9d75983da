# SPDX-License-Identifier: Apache-2.0
"""The placement plan: what gpusub adds to a job so that its cores sit next to its GPUs, without
changing what the job asks for (pure).

The rule (issue 8): a job submitted with gpusub runs as many times, with as many nodes, tasks, CPUs,
GPUs and memory, as under sbatch. The plan therefore only adds options that steer *where* Slurm
places the job, never *how much* it gets, and only where the option cannot make a job unschedulable
that sbatch would start. Measured on 22.05.8 in the lab (h100x8: GPUs 0-3 local to cores 0-15, 4-7 to
16-31; the table is in docs/gpusub.md "Placement"):

- ``--gres-flags=enforce-binding`` keeps the job's cores on the sockets of its GPUs. slurmctld refuses
  the job ("Requested node configuration is not available") when the CPUs per node exceed the cores
  of the sockets its GPUs can come from, so it is added only when they fit, and only on the Slurm
  versions where it keeps the shape (``spelling.enforce_binding_keeps_shape``): on 24.11.5 a job with
  it gets every core of its GPUs' sockets (``-c 8`` with 2 GPUs: 16 CPUs), so there it is never added.
- ``--ntasks-per-socket`` spreads a multi-task job's cores over the sockets its GPUs span
  (``--ntasks=8 -c 2`` with 8 GPUs gets cores 0-15 without it, 0-7,16-23 with it; same on 24.11.5). It caps the
  tasks per node, so it is added only when the tasks per node are known (``--ntasks-per-node``, or
  ``--ntasks`` with ``--nodes``) and the cap keeps them all; never next to ``--cpus-per-gpu``
  (22.05.8 finds no node for the pair).
- No CPU count is ever added. The policy's ``cpus_per_gpu`` default is the partition's ``DefCpuPerGPU``
  in the emitted slurm.conf, so plain sbatch and gpusub jobs get the same CPUs, each GPU's from its
  own socket (``--cpus-per-gpu=2`` with 8 GPUs: cores 0-7,16-23).
- ``--sockets-per-node`` and ``--gpus-per-socket`` are never added: on a one-task job they double the
  task count (measured: NumTasks=2, NumCPUs=4 for ``-c 2``).
- A single task's cores always come from one socket first (block), so a one-task job whose GPUs span
  two sockets gets local cores for all of them only when it asks for more cores than one socket
  has; the plan says so instead of changing the job.

Binding reaches the steps the script starts through srun's input variable ``SLURM_CPU_BIND``, which an
explicit srun option (or a value already in the job's environment) still overrides. Workers forked by torchrun,
accelerate, deepspeed or mpirun are pinned by ``slurm-gpu-pin`` (docs/pinning.md).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any

from slurm_gpu.plain import NamedTuple

ISOLATIONS = ("shared", "strict")
LAUNCHES = ("batch", "per-gpu")  # batch: the script runs once, as under sbatch (default)


class NodeLayout(NamedTuple):  # NamedTuples, not frozen dataclasses: ~1 ms less of gpusub's start each
    """One node type as the planner sees it: which socket each GPU is local to, and the cores per GPU."""

    name: str
    nodes: str  # hostlist ("" if unknown)
    gpu_sockets: tuple[tuple[int, int], ...]  # (gpu index, socket); socket -1 = unknown / spread
    socket_gpus: tuple[tuple[int, tuple[int, ...]], ...]  # socket -> GPU indices, sockets with GPUs only
    local_cores_per_gpu: int  # min over GPUs of (cores local to it / GPUs sharing those cores)
    cores_per_socket: int
    sockets: int

    @property
    def gpus(self) -> int:
        return len(self.gpu_sockets)

    @property
    def max_gpus_one_socket(self) -> int:
        return max((len(g) for _s, g in self.socket_gpus), default=0)

    def sockets_needed(self, gpus: int) -> int:
        """Fewest sockets whose local GPUs add up to ``gpus``."""
        left, used = gpus, 0
        for count in sorted((len(g) for _s, g in self.socket_gpus), reverse=True):
            if left <= 0:
                break
            left -= count
            used += 1
        return used if left <= 0 else max(used, 1)

    def socket_major_order(self) -> tuple[int, ...]:
        """GPU indices in the order tasks laid out block over sockets meet them."""
        return tuple(g for _s, gpus in sorted(self.socket_gpus) for g in gpus)


def node_layout(topo: Any, name: str = "", nodes: str = "") -> NodeLayout:
    """Read a Topology (slurm_gpu.topology) into a NodeLayout."""
    per_gpu: list[tuple[int, int]] = []
    core_sets: dict[tuple[int, ...], list[int]] = {}
    for gpu in topo.gpus:
        cores = tuple(topo.gpu_cores(gpu.index))
        sockets = {topo.core_socket(c) for c in cores}
        per_gpu.append((gpu.index, sockets.pop() if len(sockets) == 1 else -1))
        core_sets.setdefault(cores, []).append(gpu.index)
    by_socket: dict[int, list[int]] = {}
    for index, socket in per_gpu:
        if socket >= 0:
            by_socket.setdefault(socket, []).append(index)
    shares = [len(cores) // len(gpus) for cores, gpus in core_sets.items() if cores]
    return NodeLayout(
        name=name, nodes=nodes, gpu_sockets=tuple(per_gpu),
        socket_gpus=tuple((s, tuple(sorted(g))) for s, g in sorted(by_socket.items())),
        local_cores_per_gpu=min(shares) if shares else 0,
        cores_per_socket=topo.cores_per_socket, sockets=topo.sockets)


class BindingPlan(NamedTuple):
    """What gpusub adds to the job so that tasks, cores and GPUs line up."""

    sbatch_options: tuple[str, ...]
    srun_options: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    tasks: int
    cpus_per_task: int
    gpus_per_task: int | None
    isolation: str
    launch: str
    explanation: tuple[str, ...]
    nodes: int = 1
    gpus_per_node: int = 0
    cpus_per_gpu: int = 0
    sockets_per_node: int = 1
    tasks_per_socket: int | None = None
    gpu_order: tuple[tuple[str, tuple[int, ...]], ...] = ()  # (hostlist, socket-major GPU order)
    task_prelude: str = ""  # bash run in each task before the payload (GPU order, LOCAL_RANK)
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "tasks": self.tasks, "cpus_per_task": self.cpus_per_task, "gpus_per_task": self.gpus_per_task,
            "nodes": self.nodes, "gpus_per_node": self.gpus_per_node, "cpus_per_gpu": self.cpus_per_gpu,
            "sockets_per_node": self.sockets_per_node, "tasks_per_socket": self.tasks_per_socket,
            "isolation": self.isolation, "launch": self.launch,
            "sbatch_options": list(self.sbatch_options), "srun_options": list(self.srun_options),
            "env": dict(self.env), "gpu_order": {hosts: list(order) for hosts, order in self.gpu_order},
            "explanation": list(self.explanation), "warnings": list(self.warnings),
        }


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _policy_cpus_per_gpu(defaults: Any) -> int | None:
    value = getattr(defaults, "cpus_per_gpu", "topology") if defaults is not None else "topology"
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None




def _known(value: int | None) -> int | None:
    return value if isinstance(value, int) and value > 0 else None


def _gpus_per_node(request: Any, gpus: int, node_gpus: int) -> tuple[int | None, int | None]:
    """(GPUs per node, nodes) as slurmctld will lay them out, or None where it is not determined."""
    nodes = _known(request.nodes)
    if _known(request.gpus_per_node):
        return request.gpus_per_node, nodes
    if _known(request.gpus_per_task):
        tpn = _known(request.ntasks_per_node)
        if tpn is None and _known(request.ntasks) and nodes:
            tpn = _ceil_div(request.ntasks, nodes)
        if tpn is None and _known(request.ntasks) and not nodes:
            tpn = request.ntasks if request.ntasks * request.gpus_per_task <= node_gpus else None
        if tpn is None and not request.ntasks:
            tpn = 1
        return (request.gpus_per_task * tpn if tpn else None), nodes
    if nodes:
        return (gpus // nodes if gpus % nodes == 0 else None), nodes
    if gpus <= node_gpus:  # one node holds them all; slurmctld packs a per-job count onto one node
        return gpus, 1
    return None, None


def _tasks_per_node(request: Any, nodes: int | None, node_cores: int) -> int | None:
    if _known(request.ntasks_per_node):
        return int(request.ntasks_per_node)
    if _known(request.ntasks):
        if nodes:
            return _ceil_div(request.ntasks, nodes)
        # no node count: slurmctld starts from one node and packs the tasks there when they fit
        cpt = _known(request.cpus_per_task) or 1
        return request.ntasks if request.ntasks * cpt <= node_cores else None
    return 1  # sbatch's default: one task


def plan_placement(request: Any, decision: Any, spelling: Any, layouts: Sequence[NodeLayout], *,
                   defaults: Any = None, given: Collection[str] = (), cpu_bind: str = "cores",
                   isolation: str = "shared", partition_layouts: Sequence[NodeLayout] | None = None,
                   ) -> BindingPlan | None:
    """The default plan: placement options that keep the job's shape (see the module docstring).

    ``given``: names of the sbatch options the user or the policy set; the plan never overrides those.
    ``partition_layouts``: every GPU node type of the chosen partition (its DefCpuPerGPU is the least
    over them, as the emitter writes it); default ``layouts``.
    Returns None for a job without GPUs or without a known node type."""
    layouts = [lay for lay in layouts if lay.gpus > 0]
    gpus = int(getattr(decision, "gpus", 0) or request.total_gpus)
    if gpus <= 0 or not layouts:
        return None
    given = set(given)
    why: list[str] = []
    warnings: list[str] = []
    opts: list[str] = []
    node_gpus = min(lay.gpus for lay in layouts)
    per_node, nodes = _gpus_per_node(request, gpus, node_gpus)
    if per_node is None and not nodes and gpus > node_gpus and gpus % node_gpus:
        warnings.append(f"{gpus} GPUs do not fill whole nodes of {node_gpus}: Slurm splits them unevenly "
                        f"(ask for a multiple of {node_gpus}, or give --gpus-per-node)")
    tpn = _tasks_per_node(request, nodes, min(lay.cores_per_socket * lay.sockets for lay in layouts))
    names = ", ".join(f"{lay.name or '?'} (" + "; ".join(
        f"socket {s}: GPUs {','.join(map(str, g))}" for s, g in lay.socket_gpus) + ")" for lay in layouts)
    why.append(f"the job keeps its shape: {gpus} GPU(s)"
               + (f", {per_node} per node" if per_node else "")
               + (f", {tpn} task(s) per node" if tpn else ", tasks per node chosen by Slurm")
               + f"; node types {names}")

    # CPUs: the user's count, else the partition's DefCpuPerGPU, which the emitter writes from the
    # policy's cpus_per_gpu (server-side, so a plain sbatch job gets the same CPUs; gpusub adds none)
    user_cpus = bool(_known(request.cpus_per_task) or _known(request.cpus_per_gpu)
                     or {"cpus-per-task", "cpus-per-gpu", "mincpus"} & given)
    local = min(lay.local_cores_per_gpu for lay in layouts) or 1
    policy_cpg = default_cpus_per_gpu(defaults, partition_layouts or layouts)
    cpg = _known(request.cpus_per_gpu)
    if not user_cpus and policy_cpg:
        cpg = policy_cpg
        why.append(f"no CPU count given: the partition's DefCpuPerGPU={cpg} (the policy's cpus_per_gpu) "
                   "gives each GPU its CPUs from its own socket")
    c = _known(request.cpus_per_task) or 1
    cpus_per_node = None
    if per_node and tpn:
        cpus_per_node = max(tpn * c, (cpg or 0) * per_node)
    if cpg and per_node and cpg > local:
        warnings.append(f"{cpg} CPUs per GPU is more than the {local} cores local to each GPU: "
                        "some cores will be on another socket")
    if per_node and tpn and cpus_per_node and cpus_per_node > max(
            lay.cores_per_socket * lay.sockets_needed(per_node) for lay in layouts):
        warnings.append(f"{cpus_per_node} CPUs per node is more than the cores local to {per_node} GPU(s): "
                        "some cores will be on another socket")

    # spread the tasks over the GPUs' sockets
    sockets = max(lay.sockets_needed(per_node) for lay in layouts) if per_node else None
    if (sockets and sockets > 1 and tpn and tpn > 1 and cpg is None and "ntasks-per-socket" not in given
            and tpn % sockets == 0
            and all((tpn // sockets) * c <= lay.cores_per_socket for lay in layouts)):
        nps = tpn // sockets
        opts.append(f"--ntasks-per-socket={nps}")
        why.append(f"--ntasks-per-socket={nps}: {per_node} GPUs span {sockets} sockets, so each socket's "
                   f"{nps} task(s) get cores next to its GPUs (without it, 8 tasks x 2 CPUs got cores 0-15)")
    elif sockets and sockets > 1 and tpn and tpn > 1 and tpn % sockets:
        warnings.append(f"{tpn} tasks per node do not split evenly over the {sockets} sockets of its {per_node} GPUs: "
                        "some GPUs' tasks will have cores on the other socket (ask for a multiple of "
                        f"{sockets} tasks per node)")
    elif sockets and sockets > 1 and (tpn or 1) == 1 and cpg is None and (cpus_per_node or c) <= min(
            lay.cores_per_socket for lay in layouts):
        warnings.append(f"one task with {cpus_per_node or c} CPU(s) and {per_node} GPUs on {sockets} sockets: "
                        "its cores come from one socket, so the GPUs of the other have no local core "
                        f"(ask for more than {min(lay.cores_per_socket for lay in layouts)} CPUs, or one "
                        "task per socket, to change that)")

    # keep the cores on the GPUs' sockets
    if "gres-flags" not in given:
        fits = (per_node is not None and cpus_per_node is not None
                and all(cpus_per_node <= lay.cores_per_socket * lay.sockets_needed(per_node) for lay in layouts))
        if fits and not spelling.enforce_binding_keeps_shape:
            why.append(f"no --gres-flags=enforce-binding: on Slurm {spelling.label} it changes the job's CPUs "
                       "(measured on 24.11.5: a job with it gets every core of its GPUs' sockets, -c 8 with 2 "
                       "GPUs got 16 CPUs), and the job keeps the shape sbatch gives it")
        elif fits:
            opts.append("--gres-flags=enforce-binding")
            why.append(f"--gres-flags=enforce-binding: the job's {cpus_per_node} CPU(s) per node fit the "
                       "sockets of its GPUs, so no core comes from a socket without one of its GPUs")
        else:
            why.append("no --gres-flags=enforce-binding: the CPUs per node are not known to fit the GPUs' "
                       "sockets (slurmctld would refuse the job)")

    kept = sorted(n for n in ("cpus-per-gpu", "ntasks-per-socket", "gres-flags") if n in given)
    if kept:
        why.append("kept " + ", ".join("--" + n for n in kept) + " as set by you or the policy")

    # binding for the steps the script starts (srun reads these input variables)
    # only the CPU binding: --mem-bind needs task/affinity and NUMA support that not every node has
    # (a step that cannot honour it fails); workers' memory policy is slurm-gpu-pin's job
    srun = [f"--cpu-bind={cpu_bind}"]
    if isolation == "strict":
        srun.append(spelling.gpu_bind("closest"))
        why.append("strict isolation: each srun task sees the GPUs closest to its cores")
    why.append("srun steps inside the script bind each task to its cores ("
               + ", ".join(srun) + ", through srun's input variables; an explicit srun option wins); "
               "workers forked by torchrun/accelerate/deepspeed/mpirun: slurm-gpu-pin")
    return BindingPlan(
        sbatch_options=tuple(opts), srun_options=tuple(srun), env=(), tasks=(tpn or 0) * (nodes or 0),
        cpus_per_task=c, gpus_per_task=_known(request.gpus_per_task), isolation=isolation, launch="batch",
        explanation=tuple(why), nodes=nodes or 0, gpus_per_node=per_node or 0, cpus_per_gpu=cpg or 0,
        sockets_per_node=sockets or 0, tasks_per_socket=None,
        gpu_order=tuple((lay.nodes, lay.socket_major_order()) for lay in layouts), warnings=tuple(warnings))


_FEATURE_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def constraint_warnings(constraint: str | None, features_by_type: Sequence[tuple[str, Sequence[str]]],
                        gpu_type: str | None) -> tuple[str, ...]:
    """A ``--constraint`` naming a feature that no node type the job can land on has: the job would pend
    forever. ``features_by_type``: (node type, its Features=) for those node types."""
    if not constraint or not features_by_type:
        return ()
    have = {f for _name, feats in features_by_type for f in feats}
    words = list(dict.fromkeys(_FEATURE_WORD.findall(re.sub(r"\*[0-9]+", "", constraint))))
    missing = [w for w in words if w not in have]
    alternatives = "|" in constraint or "[" in constraint  # satisfiable while any alternative exists
    if not missing or (alternatives and len(missing) < len(words)):
        return ()
    types = ", ".join(name for name, _f in features_by_type)
    return (f"--constraint={constraint}: no node of " + (f"GPU type {gpu_type} " if gpu_type else "")
            + f"({types}) has the feature(s) {', '.join(missing)}; features there: {', '.join(sorted(have))}",)


def default_cpus_per_gpu(defaults: Any, layouts: Sequence[NodeLayout]) -> int | None:
    """The policy's CPUs per GPU: a number, or ``topology`` = the cores local to each GPU (the least
    over the node types). The emitter writes the same value as the partition's DefCpuPerGPU."""
    value = getattr(defaults, "cpus_per_gpu", None) if defaults is not None else None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if value == "topology" and layouts:
        return min(lay.local_cores_per_gpu for lay in layouts) or None
    return None


def plan_binding(request: Any, decision: Any, spelling: Any, layouts: Sequence[NodeLayout], *,
                 launch: str | None = None, isolation: str = "shared", defaults: Any = None,
                 given: Collection[str] = (), cpu_bind: str = "cores",
                 partition_layouts: Sequence[NodeLayout] | None = None) -> BindingPlan | None:
    """The plan for ``launch``: ``batch`` (default, :func:`plan_placement`) or ``per-gpu`` (opt-in)."""
    if isolation not in ISOLATIONS:
        from slurm_gpu.errors import SlurmGpuError

        raise SlurmGpuError(f"--gpu-isolation {isolation}: accepted values are {', '.join(ISOLATIONS)}")
    if (launch or "batch") == "per-gpu":
        from slurm_gpu.placement.per_gpu import plan_per_gpu

        return plan_per_gpu(request, decision, None, spelling, isolation, defaults=defaults, layouts=layouts,
                            given=given, cpu_bind=cpu_bind)
    return plan_placement(request, decision, spelling, layouts, defaults=defaults, given=given,
                          cpu_bind=cpu_bind, isolation=isolation, partition_layouts=partition_layouts)


__all__ = ["BindingPlan", "NodeLayout", "node_layout", "plan_placement", "plan_binding", "default_cpus_per_gpu",
           "ISOLATIONS", "LAUNCHES", "constraint_warnings"]
