# SPDX-License-Identifier: Apache-2.0
"""The opt-in per-GPU launch (``gpusub --launch=per-gpu``): one task per GPU, each with the cores local
to its GPU, and the payload started once per task through ``srun`` with a per-task prelude that
orders ``CUDA_VISIBLE_DEVICES``. It changes the job's shape on purpose: the user asked for it by name.
The default launch is :func:`slurm_gpu.placement.plan.plan_placement`, which never changes the shape.

What slurmctld does (measured on 22.05.8 in the lab, see docs/gpusub.md "Locality"):
plain ``--gres=gpu:h100:8 --ntasks=8 --cpus-per-task=2`` gets cores 0-15, all on socket 0, so GPUs
4-7 have no local core. ``--ntasks-per-socket`` spreads the tasks' cores over the sockets in the
ratio of the GPUs, and ``--gres-flags=enforce-binding`` keeps the GPUs on the sockets whose
cores the job got.

GPU isolation. ``shared`` (default) keeps NCCL P2P / CUDA IPC working: on Slurm >= 23.11.4
``srun --gres-flags=allow-task-sharing`` with per-task GPU binding; before that every task sees
all of the job's GPUs and :attr:`BindingPlan.task_prelude` reorders ``CUDA_VISIBLE_DEVICES`` so
that entry ``LOCAL_RANK`` is the GPU local to the task's cores. ``strict`` gives each task only
its own GPU(s) (device cgroups then block CUDA IPC between tasks).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from slurm_gpu.errors import SlurmGpuError
from slurm_gpu.placement.layout import (
    ISOLATIONS,
    SOCKET_SHAPE_OPTIONS,
    BindingPlan,
    NodeLayout,
    ceil_div,
    default_cpus_per_gpu,
    node_layout,
)
from slurm_gpu.request import Decision, JobRequest
from slurm_gpu.slurm.release import SlurmSpelling

if TYPE_CHECKING:  # the types only: gpusub's start does not load the policy or topology model for them
    from slurm_gpu.policy.model import Defaults
    from slurm_gpu.topology.model import Topology


def task_prelude(layouts: Sequence[NodeLayout], isolation: str, gpus_per_task: int | None) -> str:
    """Bash for each task: order this node's GPUs socket-major so that task LOCAL_RANK's GPU is local
    to its cores (tasks are distributed block over sockets), then export LOCAL_RANK and
    CUDA_VISIBLE_DEVICES (all GPUs reordered for ``shared``, only the task's own for ``strict``).
    Uses SLURM_STEP_GPUS / SLURM_JOB_GPUS (global ids, as in gres.conf) and maps them onto the
    positions of CUDA_VISIBLE_DEVICES (which cgroups may renumber from 0)."""
    cases = []
    for lay in layouts:
        ranks = " ".join(f"[{g}]={s}" for g, s in lay.gpu_sockets)
        pattern = "|".join(_expand(lay.nodes)) or "*"
        cases.append(f"  {pattern}) declare -A _gs=({ranks}) ;;")
    per_task = gpus_per_task or 1
    strict = "1" if isolation == "strict" else "0"
    return "\n".join([
        "export LOCAL_RANK=\"${SLURM_LOCALID:-0}\" RANK=\"${SLURM_PROCID:-0}\" WORLD_SIZE=\"${SLURM_NTASKS:-1}\"",
        "export LOCAL_WORLD_SIZE=\"${SLURM_NTASKS_PER_NODE:-${SLURM_TASKS_PER_NODE%%(*}}\"",
        "_ids=\"${SLURM_STEP_GPUS:-${SLURM_JOB_GPUS:-}}\"",
        "if [ -n \"$_ids\" ] && [ -n \"${CUDA_VISIBLE_DEVICES:-}\" ]; then",
        "  case \"${SLURMD_NODENAME:-}\" in",
        *cases,
        "  *) declare -A _gs=() ;;",
        "  esac",
        "  IFS=, read -r -a _g <<< \"$_ids\"; IFS=, read -r -a _c <<< \"$CUDA_VISIBLE_DEVICES\"",
        "  _order=()",
        "  for _s in $(printf '%s\\n' \"${_gs[@]:-0}\" | sort -un); do",
        "    for _i in \"${!_g[@]}\"; do"
        " [ \"${_gs[${_g[$_i]}]:-0}\" = \"$_s\" ] && _order+=(\"${_c[$_i]:-${_g[$_i]}}\"); done",
        "  done",
        "  [ ${#_order[@]} -eq ${#_g[@]} ] || _order=(\"${_c[@]}\")",
        f"  if [ {strict} = 1 ]; then _first=$(( LOCAL_RANK * {per_task} % ${{#_order[@]}} ));"
        f" _order=(\"${{_order[@]:$_first:{per_task}}}\"); fi",
        "  CUDA_VISIBLE_DEVICES=$(IFS=,; echo \"${_order[*]}\"); export CUDA_VISIBLE_DEVICES",
        "fi",
        "unset _ids _g _c _order _s _i _first _gs",
    ])


def _expand(hostlist: str) -> list[str]:
    if not hostlist:
        return []
    from slurm_gpu.hostlist import expand_hostlist

    return list(expand_hostlist(hostlist))


class _PerGpu:
    """One per-GPU plan's working state: what the steps read, and what they decided so far (a plain
    class, as the classifier's State: a dataclass costs gpusub's start about 1 ms)."""

    __slots__ = ("request", "decision", "spelling", "isolation", "defaults", "layouts", "given", "gpus", "cpu_bind",
                 "per_node", "nodes", "tasks", "tasks_per_node", "gpus_per_task", "cpg", "cpus_per_task", "sockets",
                 "tasks_per_socket", "opts", "srun", "prelude", "why", "warnings")

    def __init__(self, request: JobRequest, decision: Decision, spelling: SlurmSpelling, isolation: str,
                 defaults: Defaults | None,
                 layouts: list[NodeLayout], given: set[str], gpus: int, cpu_bind: str) -> None:
        self.request, self.decision, self.spelling, self.isolation = request, decision, spelling, isolation
        self.defaults, self.layouts, self.given, self.gpus, self.cpu_bind = defaults, layouts, given, gpus, cpu_bind
        self.per_node = self.nodes = 0  # GPUs per node, nodes
        self.tasks = self.tasks_per_node = 0
        self.gpus_per_task: int | None = None
        self.cpg = self.cpus_per_task = 0  # cores per GPU, per task
        self.sockets = 1  # sockets a node's GPUs span
        self.tasks_per_socket = 0
        self.opts: list[str] = []
        self.srun: list[str] = []
        self.prelude = ""
        self.why: list[str] = []
        self.warnings: list[str] = []

    @property
    def node_gpus(self) -> int:
        return min(lay.gpus for lay in self.layouts)

    @property
    def local(self) -> int:
        """The cores local to each GPU (the least over the node types; at least 1)."""
        return min(lay.local_cores_per_gpu for lay in self.layouts) or 1


Case = tuple[str, Callable[[_PerGpu], bool], Callable[[_PerGpu], None]]


def _first_case(cases: Sequence[Case], st: _PerGpu) -> None:
    for _name, holds, act in cases:
        if holds(st):
            act(st)
            return


def _nodes(st: _PerGpu) -> None:
    """Nodes and GPUs per node: the user's --gpus-per-node, else as few nodes as hold the GPUs."""
    r = st.request
    if r.gpus_per_node:
        st.per_node = r.gpus_per_node
        st.nodes = r.nodes or ceil_div(st.gpus, st.per_node)
    else:
        st.nodes = r.nodes or ceil_div(st.gpus, st.node_gpus)
        st.per_node = ceil_div(st.gpus, st.nodes)
    st.why.append(f"{st.gpus} GPU(s) on {st.nodes} node(s), {st.per_node} per node; node types "
                  + ", ".join(f"{lay.name or '?'} ({lay.gpus} GPUs, " + "; ".join(
                      f"socket {s}: GPUs {','.join(map(str, g))}" for s, g in lay.socket_gpus) + ")"
                      for lay in st.layouts))
    if st.per_node > st.node_gpus:
        st.warnings.append(f"{st.per_node} GPUs per node but the node type has {st.node_gpus}")


# The task count: the first of the user's task options given, else one task per GPU (how, count or None)
_TASK_SHAPES: tuple[tuple[str, Callable[[_PerGpu], int | None]], ...] = (
    ("--ntasks (yours)", lambda st: st.request.ntasks),
    ("--ntasks-per-node (yours)", lambda st: st.request.ntasks_per_node and st.request.ntasks_per_node * st.nodes),
    ("--gpus-per-task (yours)", lambda st: st.request.gpus_per_task and max(1, st.gpus // st.request.gpus_per_task)),
    ("--ntasks-per-gpu (yours)", lambda st: st.request.ntasks_per_gpu and st.request.ntasks_per_gpu * st.gpus),
    ("one task per GPU", lambda st: st.gpus),
)


def _tasks(st: _PerGpu) -> None:
    how, st.tasks = next((how, n) for how, count in _TASK_SHAPES if (n := count(st)))
    st.tasks_per_node = max(1, ceil_div(st.tasks, st.nodes))
    even = st.per_node % st.tasks_per_node == 0 and st.tasks_per_node <= st.per_node
    st.gpus_per_task = st.request.gpus_per_task or (st.per_node // st.tasks_per_node if even else None)
    st.why.append(f"{st.tasks} task(s), {st.tasks_per_node} per node ({how})")


def _cores_yours_per_gpu(st: _PerGpu) -> None:
    st.cpg = st.request.cpus_per_gpu or 0  # given: this case holds
    st.why.append(f"{st.cpg} cores per GPU (--cpus-per-gpu, yours)")
    if st.cpg > st.local:
        st.warnings.append(f"--cpus-per-gpu={st.cpg} is more than the {st.local} cores local to each GPU; "
                           "some cores will be remote")


def _cores_yours_per_task(st: _PerGpu) -> None:
    st.cpg = max(1, (st.request.cpus_per_task or 0) * st.tasks_per_node // st.per_node)  # given: this case holds
    st.why.append(f"{st.request.cpus_per_task} cores per task (--cpus-per-task, yours) = {st.cpg} per GPU")


def _cores_policy(st: _PerGpu) -> None:
    policy_cpg = default_cpus_per_gpu(st.defaults, ()) or 0  # a number only; "topology" is the next case
    st.cpg = min(policy_cpg, st.local)
    st.why.append(f"{st.cpg} cores per GPU (policy {policy_cpg}, capped by the {st.local} local to each GPU)")


def _cores_topology(st: _PerGpu) -> None:
    st.cpg = st.local
    st.why.append(f"{st.cpg} cores per GPU (the cores local to each GPU, from topology)")


_CORE_CASES: tuple[Case, ...] = (
    ("--cpus-per-gpu", lambda st: bool(st.request.cpus_per_gpu), _cores_yours_per_gpu),
    ("--cpus-per-task", lambda st: bool(st.request.cpus_per_task), _cores_yours_per_task),
    ("the policy's cpus_per_gpu", lambda st: bool(default_cpus_per_gpu(st.defaults, ())), _cores_policy),
    ("the cores local to each GPU", lambda st: True, _cores_topology),
)


def _cores(st: _PerGpu) -> None:
    """Cores per GPU, then per task."""
    _first_case(_CORE_CASES, st)
    st.cpus_per_task = st.request.cpus_per_task or max(1, st.cpg * st.per_node // st.tasks_per_node)


def _task_options(st: _PerGpu) -> None:
    """The task shape (unless the user gave one) and CPUs per task (unless given)."""
    r = st.request
    if not (r.ntasks or r.ntasks_per_node or r.gpus_per_task or r.ntasks_per_gpu):
        st.opts.append(f"--ntasks={st.tasks}")
        if st.nodes > 1:
            st.opts.append(f"--ntasks-per-node={st.tasks_per_node}")
    if not r.cpus_per_task and not r.cpus_per_gpu and not {"cpus-per-task", "cpus-per-gpu"} & st.given:
        st.opts.append(f"--cpus-per-task={st.cpus_per_task}")  # never both: sbatch refuses -c with --cpus-per-gpu


def _sockets(st: _PerGpu) -> None:
    """Tasks per socket, so that each socket's cores follow its GPUs."""
    st.sockets = max(lay.sockets_needed(st.per_node) for lay in st.layouts)
    if st.sockets == 1:
        st.tasks_per_socket = st.tasks_per_node
        st.why.append(f"all {st.per_node} GPU(s) of a node fit one socket: cores from that socket only")
    else:
        st.tasks_per_socket = ceil_div(st.tasks_per_node, st.sockets)
        st.why.append(f"{st.per_node} GPUs span {st.sockets} sockets: at most {st.tasks_per_socket} task(s) per "
                      "socket, so each socket's cores follow its GPUs")
    if st.tasks_per_node > 1 or st.sockets > 1:
        st.opts.append(f"--ntasks-per-socket={st.tasks_per_socket}")


# not with --gpus/--gpus-per-* (slurmctld refuses typed and untyped GPU options together, and a
# per-job count plus a per-socket count can disagree); the policy's or the user's --gres is fine
_GPU_OPTIONS = {"gpus-per-socket", "sockets-per-node", "gpus", "gpus-per-node", "gpus-per-task", "tres-per-task"}


def _gpus_split_evenly(st: _PerGpu) -> bool:
    per_node, sockets = st.per_node, st.sockets
    per_socket = per_node // sockets
    return (per_node > 1 and per_node % sockets == 0 and st.tasks_per_node % sockets == 0
            and all(per_socket <= min(len(g) for _s, g in lay.socket_gpus) or sockets == 1
                    and per_socket <= lay.max_gpus_one_socket for lay in st.layouts)
            and not _GPU_OPTIONS & st.given)


def _gpus_per_socket(st: _PerGpu) -> None:
    per_socket = st.per_node // st.sockets
    gtype = st.decision.gpu_type or st.request.gpu_type
    st.opts.append(f"--gpus-per-socket={gtype + ':' if gtype else ''}{per_socket}")
    st.opts.append(f"--sockets-per-node={st.sockets}")
    st.why.append(f"--gpus-per-socket={per_socket} --sockets-per-node={st.sockets}: the GPUs come {per_socket} "
                  f"from each of {st.sockets} socket(s), the same split as the tasks' cores (without it slurmctld "
                  "may pick GPUs 1 + 3 for cores 2 + 2 tasks when GPUs are partly busy)")


def _gpus_uneven(st: _PerGpu) -> None:
    st.why.append(f"{st.per_node} GPUs do not split evenly over {st.sockets} sockets: the cores follow "
                  "--ntasks-per-socket and block:block only (locality holds on idle sockets)")


_GPU_SPLIT_CASES: tuple[Case, ...] = (
    ("the GPUs split evenly over the sockets: --gpus-per-socket", _gpus_split_evenly, _gpus_per_socket),
    ("several GPUs, no even split: say so", lambda st: st.per_node > 1, _gpus_uneven),
)


def _gpu_split(st: _PerGpu) -> None:
    _first_case(_GPU_SPLIT_CASES, st)


def _not_with_cpus_per_gpu(st: _PerGpu) -> None:
    # 22.05.8: --cpus-per-gpu with --ntasks-per-socket is "Requested node configuration is not
    # available" (a100 x3, and h100 x2 with --gpus-per-socket); cores then follow the GPUs per GPU
    if st.request.cpus_per_gpu or "cpus-per-gpu" in st.given:
        st.opts = [o for o in st.opts if not o.startswith("--ntasks-per-socket=")]
        st.why.append("no --ntasks-per-socket next to --cpus-per-gpu (slurmctld finds no node for the pair)")


def _distribution(st: _PerGpu) -> None:
    if "distribution" not in st.given:
        st.opts.append("--distribution=block:block")
        st.why.append("--distribution=block:block: cores fill one socket before the next, so an uneven GPU "
                      "split (3 GPUs = 2 + 1) gets its cores in the same ratio")


def _no_binding_here(st: _PerGpu) -> None:
    st.why.append(f"no --gres-flags=enforce-binding: on Slurm {st.spelling.label} it gives the job every core of "
                  "its GPUs' sockets instead of the planned cores per task")


def _cores_fit_sockets(st: _PerGpu) -> bool:
    fits_local = all(st.cpg * len(g) <= lay.cores_per_socket for lay in st.layouts for _s, g in lay.socket_gpus)
    return fits_local and st.cpus_per_task * st.tasks_per_socket <= min(lay.cores_per_socket for lay in st.layouts)


def _enforce(st: _PerGpu) -> None:
    st.opts.append("--gres-flags=enforce-binding")
    st.why.append("--gres-flags=enforce-binding: the job's cores fit the GPUs' local sockets")


def _warn_no_binding(st: _PerGpu) -> None:
    st.warnings.append("the request needs more cores than the GPUs' sockets have; not enforcing GPU-core binding")


def _no_binding_shaped(st: _PerGpu) -> None:
    st.why.append("no --gres-flags=enforce-binding: the job's sockets and cores are the user's (-B and its parts)")


_BINDING_CASES: tuple[Case, ...] = (
    ("the user chose the sockets and cores", lambda st: bool(SOCKET_SHAPE_OPTIONS & st.given), _no_binding_shaped),
    ("this Slurm changes the job's CPUs with enforce-binding",
     lambda st: not st.spelling.enforce_binding_keeps_shape, _no_binding_here),
    ("the cores fit the GPUs' sockets: enforce-binding", _cores_fit_sockets, _enforce),
    ("they do not: warn", lambda st: True, _warn_no_binding),
)


def _enforce_binding(st: _PerGpu) -> None:
    _first_case(_BINDING_CASES, st)


def _kept(st: _PerGpu) -> None:
    """Leave out what the user or the policy set themselves, and say so."""
    kept = [o for o in st.opts if o[2:].partition("=")[0] in st.given]
    if kept:
        st.why.append("kept the " + ", ".join("--" + o[2:].partition("=")[0] for o in kept)
                      + " set by you or the policy, instead of " + " ".join(kept))
        st.opts = [o for o in st.opts if o not in kept]


def _strict(st: _PerGpu) -> None:
    if st.gpus_per_task and st.spelling.gpus_per_task_implies_isolation and st.request.gpus_per_task:
        st.why.append("strict isolation: --gpus-per-task already binds each task to its GPUs")
    # "closest" (not single:1, which binds by GPU index order and so crosses sockets on a DGX-like
    # node): Slurm limits each task to its socket's GPUs; the prelude then keeps the task's own one.
    st.srun.append(st.spelling.gpu_bind("closest"))
    st.prelude = task_prelude(st.layouts, "strict", st.gpus_per_task)
    st.why.append("strict isolation: each task sees only its own GPU(s); CUDA IPC between tasks is blocked")


def _shared_task_sharing(st: _PerGpu) -> None:
    st.srun.append("--gres-flags=allow-task-sharing")
    st.prelude = task_prelude(st.layouts, "shared", st.gpus_per_task)
    st.why.append("shared GPUs: srun --gres-flags=allow-task-sharing keeps every GPU of the step openable "
                  "(NCCL P2P works); CUDA_VISIBLE_DEVICES is reordered so entry LOCAL_RANK is the local GPU")


def _shared_all_gpus(st: _PerGpu) -> None:
    st.prelude = task_prelude(st.layouts, "shared", st.gpus_per_task)
    st.why.append(f"shared GPUs (Slurm {st.spelling.label} has no allow-task-sharing): every task sees all of the "
                  "job's GPUs, reordered so entry LOCAL_RANK is the GPU local to the task's cores")


_ISOLATION_CASES: tuple[Case, ...] = (
    ("strict: each task its own GPU(s)", lambda st: st.isolation == "strict", _strict),
    ("shared, srun --gres-flags=allow-task-sharing (23.11.4+)", lambda st: bool(st.spelling.has_allow_task_sharing),
     _shared_task_sharing),
    ("shared, every task sees the job's GPUs", lambda st: True, _shared_all_gpus),
)


def _launch(st: _PerGpu) -> None:
    """The payload once per task through srun, each task bound to its cores and (by isolation) GPUs."""
    st.srun = [f"--cpu-bind={st.cpu_bind}", "--mem-bind=local"]
    if "distribution" not in st.given:
        st.srun.append("--distribution=block:block")
    _first_case(_ISOLATION_CASES, st)
    st.why.append(f"OMP_NUM_THREADS={st.cpus_per_task} (cores per task)")


# The per-GPU plan, step by step (each reads what the ones before it decided). A new rule is a new row.
PER_GPU_STEPS: tuple[tuple[str, Callable[[_PerGpu], None]], ...] = (
    ("nodes", _nodes),
    ("tasks", _tasks),
    ("cores", _cores),
    ("task_options", _task_options),
    ("sockets", _sockets),
    ("gpu_split", _gpu_split),
    ("not_with_cpus_per_gpu", _not_with_cpus_per_gpu),
    ("distribution", _distribution),
    ("enforce_binding", _enforce_binding),
    ("kept", _kept),
    ("launch", _launch),
)


def _layouts(topo: Topology | list[Topology] | tuple[Topology, ...] | None) -> list[NodeLayout]:
    """One Topology, or a list or tuple of them, as layouts."""
    if topo is None:
        raise TypeError("plan_per_gpu: give layouts or topo")
    return [node_layout(t) for t in (list(topo) if isinstance(topo, (list, tuple)) else [topo])]


def plan_per_gpu(request: JobRequest, decision: Decision, topo: Topology | list[Topology] | tuple[Topology, ...] | None,
                 spelling: SlurmSpelling, isolation: str = "shared", *, launch: str | None = None,
                 defaults: Defaults | None = None,
                 layouts: Sequence[NodeLayout] | None = None, given: Collection[str] = (),
                 cpu_bind: str = "cores") -> BindingPlan | None:
    """The opt-in per-GPU launch (``gpusub --launch=per-gpu``): one task per GPU unless the user set a
    task shape, each GPU's local cores, and the payload started once per task through ``srun``. This
    changes the job's shape on purpose (the user asked for it); the default is :func:`plan_placement`.
    ``topo`` is one Topology or a sequence of them
    (every node type the job may land on); ``layouts`` may be given instead (with node names).
    ``given``: names of the sbatch options the user or the policy set; the plan never overrides those.
    ``cpu_bind``: the srun ``--cpu-bind`` type (``cores``; explicit masks or ``verbose`` where a site,
    or the lab with its 2 real CPUs, needs another).
    Returns None for a job without GPUs."""
    if isolation not in ISOLATIONS:
        raise SlurmGpuError(f"--gpu-isolation {isolation}: accepted values are {', '.join(ISOLATIONS)}")
    layouts = [lay for lay in (_layouts(topo) if layouts is None else layouts) if lay.gpus > 0]
    gpus = int(decision.gpus or request.total_gpus)
    if gpus <= 0 or not layouts:
        return None
    st = _PerGpu(request, decision, spelling, isolation, defaults, layouts, set(given), gpus, cpu_bind)
    for _name, step in PER_GPU_STEPS:
        step(st)
    return _per_gpu_plan(st)


def _per_gpu_plan(st: _PerGpu) -> BindingPlan:
    return BindingPlan(
        sbatch_options=tuple(st.opts), srun_options=tuple(st.srun), env=(("OMP_NUM_THREADS", str(st.cpus_per_task)),),
        tasks=st.tasks, cpus_per_task=st.cpus_per_task, gpus_per_task=st.gpus_per_task, isolation=st.isolation,
        launch="per-gpu", explanation=tuple(st.why), nodes=st.nodes, gpus_per_node=st.per_node, cpus_per_gpu=st.cpg,
        sockets_per_node=st.sockets, tasks_per_socket=st.tasks_per_socket,
        gpu_order=tuple((lay.nodes, lay.socket_major_order()) for lay in st.layouts),
        task_prelude=st.prelude, warnings=tuple(st.warnings))


__all__ = ["plan_per_gpu", "task_prelude"]
