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

from collections.abc import Collection, Sequence
from typing import Any

from slurm_gpu.placement.plan import ISOLATIONS, BindingPlan, NodeLayout, _ceil_div, _policy_cpus_per_gpu, node_layout


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


def plan_per_gpu(request: Any, decision: Any, topo: Any, spelling: Any, isolation: str = "shared", *,
                 launch: str | None = None, defaults: Any = None,
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
        from slurm_gpu.errors import SlurmGpuError

        raise SlurmGpuError(f"--gpu-isolation {isolation}: accepted values are {', '.join(ISOLATIONS)}")
    if layouts is None:
        topos = list(topo) if isinstance(topo, (list, tuple)) else [topo]
        layouts = [node_layout(t) for t in topos]
    layouts = [lay for lay in layouts if lay.gpus > 0]
    gpus = int(getattr(decision, "gpus", 0) or request.total_gpus)
    if gpus <= 0 or not layouts:
        return None
    why: list[str] = []
    warnings: list[str] = []
    node_gpus = min(lay.gpus for lay in layouts)

    # nodes and GPUs per node
    if request.gpus_per_node:
        per_node = request.gpus_per_node
        nodes = request.nodes or _ceil_div(gpus, per_node)
    else:
        nodes = request.nodes or _ceil_div(gpus, node_gpus)
        per_node = _ceil_div(gpus, nodes)
    why.append(f"{gpus} GPU(s) on {nodes} node(s), {per_node} per node; node types "
               + ", ".join(f"{lay.name or '?'} ({lay.gpus} GPUs, " + "; ".join(
                   f"socket {s}: GPUs {','.join(map(str, g))}" for s, g in lay.socket_gpus) + ")" for lay in layouts))
    if per_node > node_gpus:
        warnings.append(f"{per_node} GPUs per node but the node type has {node_gpus}")

    # tasks
    if request.ntasks:
        tasks, how = request.ntasks, "--ntasks (yours)"
    elif request.ntasks_per_node:
        tasks, how = request.ntasks_per_node * nodes, "--ntasks-per-node (yours)"
    elif request.gpus_per_task:
        tasks, how = max(1, gpus // request.gpus_per_task), "--gpus-per-task (yours)"
    elif request.ntasks_per_gpu:
        tasks, how = request.ntasks_per_gpu * gpus, "--ntasks-per-gpu (yours)"
    else:
        tasks, how = gpus, "one task per GPU"
    tasks_per_node = max(1, _ceil_div(tasks, nodes))
    gpus_per_task = request.gpus_per_task or (per_node // tasks_per_node if per_node % tasks_per_node == 0
                                              and tasks_per_node <= per_node else None)
    why.append(f"{tasks} task(s), {tasks_per_node} per node ({how})")

    # cores per GPU
    local = min(lay.local_cores_per_gpu for lay in layouts) or 1
    policy_cpg = _policy_cpus_per_gpu(defaults)
    if request.cpus_per_gpu:
        cpg = request.cpus_per_gpu
        why.append(f"{cpg} cores per GPU (--cpus-per-gpu, yours)")
        if cpg > local:
            warnings.append(f"--cpus-per-gpu={cpg} is more than the {local} cores local to each GPU; "
                            "some cores will be remote")
    elif request.cpus_per_task:
        cpg = max(1, request.cpus_per_task * tasks_per_node // per_node)
        why.append(f"{request.cpus_per_task} cores per task (--cpus-per-task, yours) = {cpg} per GPU")
    elif policy_cpg:
        cpg = min(policy_cpg, local)
        why.append(f"{cpg} cores per GPU (policy {policy_cpg}, capped by the {local} local to each GPU)")
    else:
        cpg = local
        why.append(f"{cpg} cores per GPU (the cores local to each GPU, from topology)")
    cpus_per_task = request.cpus_per_task or max(1, cpg * per_node // tasks_per_node)

    # sockets
    sockets = max(lay.sockets_needed(per_node) for lay in layouts)
    fits_local = all(cpg * len(g) <= lay.cores_per_socket for lay in layouts for _s, g in lay.socket_gpus)
    opts: list[str] = []
    user_shape = bool(request.ntasks or request.ntasks_per_node or request.gpus_per_task or request.ntasks_per_gpu)
    if not user_shape:
        opts.append(f"--ntasks={tasks}")
        if nodes > 1:
            opts.append(f"--ntasks-per-node={tasks_per_node}")
    if not request.cpus_per_task and not request.cpus_per_gpu and not {"cpus-per-task", "cpus-per-gpu"} & set(given):
        opts.append(f"--cpus-per-task={cpus_per_task}")  # never both: sbatch refuses -c with --cpus-per-gpu
    tasks_per_socket = None
    if sockets == 1:
        tasks_per_socket = tasks_per_node
        why.append(f"all {per_node} GPU(s) of a node fit one socket: cores from that socket only")
    else:
        tasks_per_socket = _ceil_div(tasks_per_node, sockets)
        why.append(f"{per_node} GPUs span {sockets} sockets: at most {tasks_per_socket} task(s) per socket, "
                   "so each socket's cores follow its GPUs")
    if tasks_per_node > 1 or sockets > 1:
        opts.append(f"--ntasks-per-socket={tasks_per_socket}")
    per_socket = per_node // sockets
    even = (per_node > 1 and per_node % sockets == 0 and tasks_per_node % sockets == 0
            and all(per_socket <= min(len(g) for _s, g in lay.socket_gpus) or sockets == 1
                    and per_socket <= lay.max_gpus_one_socket for lay in layouts))
    # not with --gpus/--gpus-per-* (slurmctld refuses typed and untyped GPU options together, and a
    # per-job count plus a per-socket count can disagree); the policy's or the user's --gres is fine
    if even and not {"gpus-per-socket", "sockets-per-node", "gpus", "gpus-per-node", "gpus-per-task",
                     "tres-per-task"} & set(given):
        gtype = getattr(decision, "gpu_type", None) or request.gpu_type
        opts.append(f"--gpus-per-socket={gtype + ':' if gtype else ''}{per_socket}")
        opts.append(f"--sockets-per-node={sockets}")

        why.append(f"--gpus-per-socket={per_socket} --sockets-per-node={sockets}: the GPUs come {per_socket} from "
                   f"each of {sockets} socket(s), the same split as the tasks' cores (without it slurmctld may "
                   "pick GPUs 1 + 3 for cores 2 + 2 tasks when GPUs are partly busy)")
    elif per_node > 1:
        why.append(f"{per_node} GPUs do not split evenly over {sockets} sockets: the cores follow "
                   "--ntasks-per-socket and block:block only (locality holds on idle sockets)")
    if request.cpus_per_gpu or "cpus-per-gpu" in given:
        # 22.05.8: --cpus-per-gpu with --ntasks-per-socket is "Requested node configuration is not
        # available" (a100 x3, and h100 x2 with --gpus-per-socket); cores then follow the GPUs per GPU
        opts = [o for o in opts if not o.startswith("--ntasks-per-socket=")]
        why.append("no --ntasks-per-socket next to --cpus-per-gpu (slurmctld finds no node for the pair)")
    if "distribution" not in given:
        opts.append("--distribution=block:block")
        why.append("--distribution=block:block: cores fill one socket before the next, so an uneven GPU split "
                   "(3 GPUs = 2 + 1) gets its cores in the same ratio")
    if not getattr(spelling, "enforce_binding_keeps_shape", True):
        why.append(f"no --gres-flags=enforce-binding: on Slurm {spelling.label} it gives the job every core of "
                   "its GPUs' sockets instead of the planned cores per task")
    elif fits_local and cpus_per_task * tasks_per_socket <= min(lay.cores_per_socket for lay in layouts):
        opts.append("--gres-flags=enforce-binding")
        why.append("--gres-flags=enforce-binding: the job's cores fit the GPUs' local sockets")
    else:
        warnings.append("the request needs more cores than the GPUs' sockets have; not enforcing GPU-core binding")

    kept = [o for o in opts if o[2:].partition("=")[0] in given]
    if kept:
        why.append("kept the " + ", ".join("--" + o[2:].partition("=")[0] for o in kept)
                   + " set by you or the policy, instead of " + " ".join(kept))
        opts = [o for o in opts if o not in kept]

    # launch and per-task binding
    launch = "per-gpu"
    srun = [f"--cpu-bind={cpu_bind}", "--mem-bind=local"]
    if "distribution" not in given:
        srun.append("--distribution=block:block")
    env = [("OMP_NUM_THREADS", str(cpus_per_task))]
    prelude = ""
    if isolation == "strict":
        if gpus_per_task and spelling.gpus_per_task_implies_isolation and request.gpus_per_task:
            why.append("strict isolation: --gpus-per-task already binds each task to its GPUs")
        # "closest" (not single:1, which binds by GPU index order and so crosses sockets on a DGX-like
        # node): Slurm limits each task to its socket's GPUs; the prelude then keeps the task's own one.
        srun.append(spelling.gpu_bind("closest"))
        prelude = task_prelude(layouts, "strict", gpus_per_task)
        why.append("strict isolation: each task sees only its own GPU(s); CUDA IPC between tasks is blocked")
    elif spelling.has_allow_task_sharing:
        srun.append("--gres-flags=allow-task-sharing")
        prelude = task_prelude(layouts, "shared", gpus_per_task)
        why.append("shared GPUs: srun --gres-flags=allow-task-sharing keeps every GPU of the step openable "
                   "(NCCL P2P works); CUDA_VISIBLE_DEVICES is reordered so entry LOCAL_RANK is the local GPU")
    else:
        prelude = task_prelude(layouts, "shared", gpus_per_task)
        why.append(f"shared GPUs (Slurm {spelling.label} has no allow-task-sharing): every task sees all of the "
                   "job's GPUs, reordered so entry LOCAL_RANK is the GPU local to the task's cores")
    why.append(f"OMP_NUM_THREADS={cpus_per_task} (cores per task)")
    return BindingPlan(
        sbatch_options=tuple(opts), srun_options=tuple(srun), env=tuple(env), tasks=tasks,
        cpus_per_task=cpus_per_task, gpus_per_task=gpus_per_task, isolation=isolation, launch=launch,
        explanation=tuple(why), nodes=nodes, gpus_per_node=per_node, cpus_per_gpu=cpg,
        sockets_per_node=sockets, tasks_per_socket=tasks_per_socket,
        gpu_order=tuple((lay.nodes, lay.socket_major_order()) for lay in layouts),
        task_prelude=prelude, warnings=tuple(warnings))


__all__ = ["plan_per_gpu", "task_prelude"]
