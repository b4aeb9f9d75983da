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
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from slurm_gpu.errors import SlurmGpuError
from slurm_gpu.placement.layout import (
    ISOLATIONS,
    LAUNCHES,
    SOCKET_SHAPE_OPTIONS,
    BindingPlan,
    NodeLayout,
    ceil_div,
    default_cpus_per_gpu,
    known,
    node_layout,
)
from slurm_gpu.placement.per_gpu import plan_per_gpu
from slurm_gpu.request import Decision, JobRequest
from slurm_gpu.slurm.release import SlurmSpelling

if TYPE_CHECKING:  # the type only: gpusub's start does not load the policy model for it
    from slurm_gpu.policy.model import Defaults


def _gpus_per_node(request: JobRequest, gpus: int, node_gpus: int) -> tuple[int | None, int | None]:
    """(GPUs per node, nodes) as slurmctld will lay them out, or None where it is not determined."""
    nodes = known(request.nodes)
    if (per_node := known(request.gpus_per_node)) is not None:
        return per_node, nodes
    if (per_task := known(request.gpus_per_task)) is not None:
        tpn = _gpu_tasks_per_node(request, per_task, nodes, node_gpus)
        return (per_task * tpn if tpn else None), nodes
    if nodes:
        return (gpus // nodes if gpus % nodes == 0 else None), nodes
    if gpus <= node_gpus:  # one node holds them all; slurmctld packs a per-job count onto one node
        return gpus, 1
    return None, None


def _gpu_tasks_per_node(request: JobRequest, per_task: int, nodes: int | None, node_gpus: int) -> int | None:
    """Tasks per node of a job with ``per_task`` GPUs per task (None: not determined)."""
    if (tpn := known(request.ntasks_per_node)) is not None:
        return tpn
    if (ntasks := known(request.ntasks)) is None:
        return None if request.ntasks else 1  # sbatch's default: one task
    if nodes:
        return ceil_div(ntasks, nodes)
    return ntasks if ntasks * per_task <= node_gpus else None


def _tasks_per_node(request: JobRequest, nodes: int | None, node_cores: int) -> int | None:
    if (tpn := known(request.ntasks_per_node)) is not None:
        return int(tpn)
    if (ntasks := known(request.ntasks)) is not None:
        if nodes:
            return ceil_div(ntasks, nodes)
        # no node count: slurmctld starts from one node and packs the tasks there when they fit
        cpt = known(request.cpus_per_task) or 1
        return ntasks if ntasks * cpt <= node_cores else None
    return 1  # sbatch's default: one task


class _Batch:
    """One batch plan's working state: what the steps read, and what they decided so far (a plain
    class, as the classifier's State: a dataclass costs gpusub's start about 1 ms)."""

    __slots__ = ("request", "spelling", "layouts", "defaults", "given", "partition_layouts", "gpus", "per_node",
                 "nodes", "tpn", "cpg", "c", "cpus_per_node", "sockets", "opts", "why", "warnings")

    def __init__(self, request: JobRequest, spelling: SlurmSpelling, layouts: list[NodeLayout], gpus: int,
                 defaults: Defaults | None,
                 given: set[str], partition_layouts: Sequence[NodeLayout] | None) -> None:
        self.request, self.spelling, self.layouts, self.gpus = request, spelling, layouts, gpus
        self.defaults, self.given, self.partition_layouts = defaults, given, partition_layouts
        self.per_node: int | None = None  # GPUs per node, as slurmctld lays them out (None: not determined)
        self.nodes: int | None = None
        self.tpn: int | None = None  # tasks per node
        self.cpg: int | None = None  # CPUs per GPU (the user's, or the partition's DefCpuPerGPU)
        self.c = 1  # CPUs per task
        self.cpus_per_node: int | None = None
        self.sockets: int | None = None  # sockets the GPUs of a node span
        self.opts: list[str] = []
        self.why: list[str] = []
        self.warnings: list[str] = []

    def gpu_socket_cores(self, per_node: int) -> list[int]:
        """Per node type: the cores of the sockets ``per_node`` GPUs come from."""
        return [lay.cores_per_socket * lay.sockets_needed(per_node) for lay in self.layouts]


def _gpu_shape(st: _Batch) -> None:
    """GPUs per node and nodes as slurmctld will lay them out (the plan changes neither)."""
    node_gpus = min(lay.gpus for lay in st.layouts)
    st.per_node, st.nodes = _gpus_per_node(st.request, st.gpus, node_gpus)
    if st.per_node is None and not st.nodes and st.gpus > node_gpus and st.gpus % node_gpus:
        st.warnings.append(f"{st.gpus} GPUs do not fill whole nodes of {node_gpus}: Slurm splits them unevenly "
                           f"(ask for a multiple of {node_gpus}, or give --gpus-per-node)")


def _task_shape(st: _Batch) -> None:
    """Tasks per node as slurmctld will lay them out; the explanation's first line: the shape kept."""
    st.tpn = _tasks_per_node(st.request, st.nodes, min(lay.cores_per_socket * lay.sockets for lay in st.layouts))
    names = ", ".join(f"{lay.name or '?'} (" + "; ".join(
        f"socket {s}: GPUs {','.join(map(str, g))}" for s, g in lay.socket_gpus) + ")" for lay in st.layouts)
    st.why.append(f"the job keeps its shape: {st.gpus} GPU(s)"
                  + (f", {st.per_node} per node" if st.per_node else "")
                  + (f", {st.tpn} task(s) per node" if st.tpn else ", tasks per node chosen by Slurm")
                  + f"; node types {names}")


def _cpus(st: _Batch) -> None:
    """The user's CPU count, else the partition's DefCpuPerGPU, which the emitter writes from the policy's
    cpus_per_gpu (server-side, so a plain sbatch job gets the same CPUs; gpusub adds none)."""
    r = st.request
    user_cpus = bool(known(r.cpus_per_task) or known(r.cpus_per_gpu)
                     or {"cpus-per-task", "cpus-per-gpu", "mincpus"} & st.given)
    policy_cpg = default_cpus_per_gpu(st.defaults, st.partition_layouts or st.layouts)
    st.cpg = known(r.cpus_per_gpu)
    if not user_cpus and policy_cpg:
        st.cpg = policy_cpg
        st.why.append(f"no CPU count given: the partition's DefCpuPerGPU={st.cpg} (the policy's cpus_per_gpu) "
                      "gives each GPU its CPUs from its own socket")
    st.c = known(r.cpus_per_task) or 1
    if st.per_node and st.tpn:
        st.cpus_per_node = max(st.tpn * st.c, (st.cpg or 0) * st.per_node)


def _cpu_locality(st: _Batch) -> None:
    """Warn where the CPUs cannot all be local to the GPUs."""
    local = min(lay.local_cores_per_gpu for lay in st.layouts) or 1
    if st.cpg and st.per_node and st.cpg > local:
        st.warnings.append(f"{st.cpg} CPUs per GPU is more than the {local} cores local to each GPU: "
                           "some cores will be on another socket")
    if st.per_node and st.tpn and st.cpus_per_node and st.cpus_per_node > max(st.gpu_socket_cores(st.per_node)):
        st.warnings.append(f"{st.cpus_per_node} CPUs per node is more than the cores local to {st.per_node} GPU(s): "
                           "some cores will be on another socket")


def _can_spread(st: _Batch) -> bool:
    sockets, tpn = st.sockets or 1, st.tpn or 0
    return (tpn > 1 and st.cpg is None and "ntasks-per-socket" not in st.given and tpn % sockets == 0
            and all((tpn // sockets) * st.c <= lay.cores_per_socket for lay in st.layouts))


def _spread(st: _Batch) -> None:
    nps = (st.tpn or 0) // (st.sockets or 1)
    st.opts.append(f"--ntasks-per-socket={nps}")
    st.why.append(f"--ntasks-per-socket={nps}: {st.per_node} GPUs span {st.sockets} sockets, so each socket's "
                  f"{nps} task(s) get cores next to its GPUs (without it, 8 tasks x 2 CPUs got cores 0-15)")


def _uneven_tasks(st: _Batch) -> bool:
    return bool(st.tpn and st.tpn > 1 and st.tpn % (st.sockets or 1))


def _warn_uneven_tasks(st: _Batch) -> None:
    st.warnings.append(f"{st.tpn} tasks per node do not split evenly over the {st.sockets} sockets of its "
                       f"{st.per_node} GPUs: some GPUs' tasks will have cores on the other socket (ask for a "
                       f"multiple of {st.sockets} tasks per node)")


def _one_task_one_socket(st: _Batch) -> bool:
    return ((st.tpn or 1) == 1 and st.cpg is None
            and (st.cpus_per_node or st.c) <= min(lay.cores_per_socket for lay in st.layouts))


def _warn_one_task(st: _Batch) -> None:
    st.warnings.append(f"one task with {st.cpus_per_node or st.c} CPU(s) and {st.per_node} GPUs on {st.sockets} "
                       "sockets: its cores come from one socket, so the GPUs of the other have no local core "
                       f"(ask for more than {min(lay.cores_per_socket for lay in st.layouts)} CPUs, or one "
                       "task per socket, to change that)")


Case = tuple[str, Callable[[_Batch], bool], Callable[[_Batch], None]]

# A node's GPUs span several sockets: the first case that holds decides (name, holds, act)
_SPREAD_CASES: tuple[Case, ...] = (
    ("tasks split evenly over the sockets: --ntasks-per-socket", _can_spread, _spread),
    ("tasks do not split evenly: warn", _uneven_tasks, _warn_uneven_tasks),
    ("one task whose cores fit one socket: warn", _one_task_one_socket, _warn_one_task),
)


def _spread_tasks(st: _Batch) -> None:
    """Spread the tasks over the GPUs' sockets."""
    st.sockets = max(lay.sockets_needed(st.per_node) for lay in st.layouts) if st.per_node else None
    if st.sockets and st.sockets > 1:
        _first_case(_SPREAD_CASES, st)


def _binding_fits(st: _Batch) -> bool:
    return (st.per_node is not None and st.cpus_per_node is not None
            and st.cpus_per_node <= min(st.gpu_socket_cores(st.per_node)))


def _changes_shape_here(st: _Batch) -> bool:
    return _binding_fits(st) and not st.spelling.enforce_binding_keeps_shape


def _no_binding_here(st: _Batch) -> None:
    st.why.append(f"no --gres-flags=enforce-binding: on Slurm {st.spelling.label} it changes the job's CPUs "
                  "(measured on 24.11.5: a job with it gets every core of its GPUs' sockets, -c 8 with 2 "
                  "GPUs got 16 CPUs), and the job keeps the shape sbatch gives it")


def _enforce(st: _Batch) -> None:
    st.opts.append("--gres-flags=enforce-binding")
    st.why.append(f"--gres-flags=enforce-binding: the job's {st.cpus_per_node} CPU(s) per node fit the "
                  "sockets of its GPUs, so no core comes from a socket without one of its GPUs")


def _no_binding_unknown(st: _Batch) -> None:
    st.why.append("no --gres-flags=enforce-binding: the CPUs per node are not known to fit the GPUs' "
                  "sockets (slurmctld would refuse the job)")


def _socket_shape_given(st: _Batch) -> bool:
    return bool(SOCKET_SHAPE_OPTIONS & st.given)


def _no_binding_shaped(st: _Batch) -> None:
    st.why.append("no --gres-flags=enforce-binding: the job's sockets and cores are the user's (-B, "
                  "--sockets-per-node, --cores-per-socket, --threads-per-core), which enforce-binding could make "
                  "unschedulable (-B 2:16 with one GPU)")


_BINDING_CASES: tuple[Case, ...] = (
    ("the user chose the sockets and cores", _socket_shape_given, _no_binding_shaped),
    ("fits, but this Slurm changes the job's CPUs with it", _changes_shape_here, _no_binding_here),
    ("the CPUs fit the GPUs' sockets: enforce-binding", _binding_fits, _enforce),
    ("not known to fit: none", lambda st: True, _no_binding_unknown),
)


def _enforce_binding(st: _Batch) -> None:
    """Keep the cores on the GPUs' sockets, unless the user or the policy set --gres-flags."""
    if "gres-flags" not in st.given:
        _first_case(_BINDING_CASES, st)


def _kept(st: _Batch) -> None:
    kept = sorted(n for n in ("cpus-per-gpu", "ntasks-per-socket", "gres-flags") if n in st.given)
    if kept:
        st.why.append("kept " + ", ".join("--" + n for n in kept) + " as set by you or the policy")


def _first_case(cases: Sequence[Case], st: _Batch) -> None:
    for _name, holds, act in cases:
        if holds(st):
            act(st)
            return


# The batch plan, step by step (each reads what the ones before it decided). A new rule is a new row.
BATCH_STEPS: tuple[tuple[str, Callable[[_Batch], None]], ...] = (
    ("gpu_shape", _gpu_shape),
    ("task_shape", _task_shape),
    ("cpus", _cpus),
    ("cpu_locality", _cpu_locality),
    ("spread_tasks", _spread_tasks),
    ("enforce_binding", _enforce_binding),
    ("kept", _kept),
)


def plan_placement(request: JobRequest, decision: Decision, spelling: SlurmSpelling, layouts: Sequence[NodeLayout],
                   *, defaults: Defaults | None = None, given: Collection[str] = (), cpu_bind: str = "cores",
                   isolation: str = "shared", partition_layouts: Sequence[NodeLayout] | None = None,
                   ) -> BindingPlan | None:
    """The default plan: placement options that keep the job's shape (see the module docstring).

    ``given``: names of the sbatch options the user or the policy set; the plan never overrides those.
    ``partition_layouts``: every GPU node type of the chosen partition (its DefCpuPerGPU is the least
    over them, as the emitter writes it); default ``layouts``.
    Returns None for a job without GPUs or without a known node type."""
    layouts = [lay for lay in layouts if lay.gpus > 0]
    gpus = int(decision.gpus or request.total_gpus)
    if gpus <= 0 or not layouts:
        return None
    st = _Batch(request, spelling, layouts, gpus, defaults, set(given), partition_layouts)
    for _name, step in BATCH_STEPS:
        step(st)
    return _batch_plan(st, _srun_binding(st, cpu_bind, isolation), isolation)


def _batch_plan(st: _Batch, srun: list[str], isolation: str) -> BindingPlan:
    return BindingPlan(
        sbatch_options=tuple(st.opts), srun_options=tuple(srun), env=(), tasks=(st.tpn or 0) * (st.nodes or 0),
        cpus_per_task=st.c, gpus_per_task=known(st.request.gpus_per_task), isolation=isolation, launch="batch",
        explanation=tuple(st.why), nodes=st.nodes or 0, gpus_per_node=st.per_node or 0, cpus_per_gpu=st.cpg or 0,
        sockets_per_node=st.sockets or 0, tasks_per_socket=None,
        gpu_order=tuple((lay.nodes, lay.socket_major_order()) for lay in st.layouts), warnings=tuple(st.warnings))


def _srun_binding(st: _Batch, cpu_bind: str, isolation: str) -> list[str]:
    """Binding for the steps the script starts (srun reads these input variables). Only the CPU binding:
    --mem-bind needs task/affinity and NUMA support that not every node has (a step that cannot honour
    it fails); workers' memory policy is slurm-gpu-pin's job."""
    srun = [f"--cpu-bind={cpu_bind}"]
    if isolation == "strict":
        srun.append(st.spelling.gpu_bind("closest"))
        st.why.append("strict isolation: each srun task sees the GPUs closest to its cores")
    st.why.append("srun steps inside the script bind each task to its cores ("
                  + ", ".join(srun) + ", through srun's input variables; an explicit srun option wins); "
                  "workers forked by torchrun/accelerate/deepspeed/mpirun: slurm-gpu-pin")
    return srun


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


def plan_binding(request: JobRequest, decision: Decision, spelling: SlurmSpelling, layouts: Sequence[NodeLayout], *,
                 launch: str | None = None, isolation: str = "shared", defaults: Defaults | None = None,
                 given: Collection[str] = (), cpu_bind: str = "cores",
                 partition_layouts: Sequence[NodeLayout] | None = None) -> BindingPlan | None:
    """The plan for ``launch``: ``batch`` (default, :func:`plan_placement`) or ``per-gpu`` (opt-in)."""
    if isolation not in ISOLATIONS:
        raise SlurmGpuError(f"--gpu-isolation {isolation}: accepted values are {', '.join(ISOLATIONS)}")
    if (launch or "batch") == "per-gpu":
        return plan_per_gpu(request, decision, None, spelling, isolation, defaults=defaults, layouts=layouts,
                            given=given, cpu_bind=cpu_bind)
    return plan_placement(request, decision, spelling, layouts, defaults=defaults, given=given,
                          cpu_bind=cpu_bind, isolation=isolation, partition_layouts=partition_layouts)


__all__ = ["BindingPlan", "NodeLayout", "node_layout", "plan_placement", "plan_binding", "default_cpus_per_gpu",
           "ISOLATIONS", "LAUNCHES", "constraint_warnings"]
