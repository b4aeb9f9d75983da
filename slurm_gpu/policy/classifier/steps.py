# SPDX-License-Identifier: Apache-2.0
"""The classifier as an ordered table of named steps, and ``classify`` that runs it.

``STEPS`` is the contract that the generated ``job_submit.lua`` mirrors step for step, so the names
below are stable; a new step is a new row (and a new Lua function of the same name). Each step is a
function ``step(state) -> None`` that reads the request and policy from the :class:`State`, records
what it decided (and why, in ``reasons``) on the state, and raises :class:`Reject` to refuse the job.
Steps do no I/O and never read the environment.

1. ``check_request`` -- counts are whole numbers >= 0, a GPU fraction lies in (0, 1) and comes
   without whole GPUs, a named GPU type exists. Sets ``gpus``, ``gpu_type``, ``fraction``.
2. ``fit_vram`` -- only with ``model_params`` and no GPU count: the smallest GPU allocation (of the
   requested type, if any) the model fits (sets ``gpus``, ``gpu_type``); else a warning when it will not fit.
3. ``match_class`` -- the class named with ``--class``, else the first class whose match rules hold
   (preferring one on the partition the user named). Sets ``job_class``.
4. ``place`` -- the partition (the user's, kept when it exists) and the QOS (the user's when allowed,
   else the class's, else the partition's default). Sets ``partition``, ``qos``; adds
   ``--partition``/``--qos``.
5. ``resolve_gpus`` -- a fraction becomes a MIG slice or an MPS share; whole GPUs get a type (typed
   enforcement), are checked against the QOS and partition and split evenly over nodes. Sets ``gres``.
6. ``check_sharing`` -- the slurm-gpu MIG/MPS token in the job's comment (gpusub --mig/--mps): whole
   GPUs of one type, a dynamic-MIG node type and offered profiles, or an MPS share within the policy.
7. ``check_nodes`` -- the one verdict: the request against what the nodes offer (the inventory: the
   policy's nodes, or the live cluster's records): enough nodes of the partition (``-w``, ``-x``) that
   each hold the gres asked per node (GPU types and counts, several types on one node, MIG slices,
   shards, MPS), the CPUs and memory per node where known, and meet ``--constraint``.
8. ``set_time`` -- the time limit: the user's within partition and QOS limits, or the default.
9. ``apply_defaults`` -- memory per GPU, CPUs per GPU, the class's options, checkpointing.
"""

from __future__ import annotations

from collections.abc import Callable

from slurm_gpu.policy.classifier.checks import check_request, fit_vram
from slurm_gpu.policy.classifier.fit import check_nodes
from slurm_gpu.policy.classifier.gpus import resolve_gpus
from slurm_gpu.policy.classifier.limits import apply_defaults, set_time
from slurm_gpu.policy.classifier.match import match_class
from slurm_gpu.policy.classifier.place import place
from slurm_gpu.policy.classifier.sharing import check_sharing
from slurm_gpu.policy.classifier.state import Reject, State
from slurm_gpu.policy.model import Policy
from slurm_gpu.policy.nodes import Inventory, policy_inventory
from slurm_gpu.request import Decision, JobRequest

Step = Callable[[State], None]
STEPS: tuple[tuple[str, Step], ...] = (
    ("check_request", check_request),
    ("fit_vram", fit_vram),
    ("match_class", match_class),
    ("place", place),
    ("resolve_gpus", resolve_gpus),
    ("check_sharing", check_sharing),
    ("check_nodes", check_nodes),
    ("set_time", set_time),
    ("apply_defaults", apply_defaults),
)


def classify(request: JobRequest, policy: Policy, inventory: Inventory | None = None) -> Decision:
    """Run every step in order: pure, deterministic and total (a bug becomes a rejection that says so).
    ``inventory``: what the nodes offer (the live cluster's node records); None: the policy's own nodes."""
    st = State(request, policy, inventory if inventory is not None else _policy_nodes(policy))
    try:
        for _name, step in STEPS:
            step(st)
    except Reject as rej:
        st.reasons.append(f"rejected: {rej.message}")
        return Decision(False, job_class=_name_of(st.job_class), partition=_name_of(st.partition), qos=st.qos,
                        warnings=tuple(st.warnings), reasons=tuple(st.reasons), message=rej.message, fix=rej.fix,
                        key=rej.key)
    except Exception as exc:  # totality: a bug must not crash gpusub; the message says so
        msg = f"internal classifier error in step {_name}: {type(exc).__name__}: {exc}"
        return Decision(False, reasons=(*st.reasons, msg), message=msg, fix="report this to the site admins")
    return Decision(True, job_class=_name_of(st.job_class), partition=_name_of(st.partition), qos=st.qos,
                    gres=st.gres, gpu_type=st.gpu_type, gpus=st.gpus, added_options=tuple(st.options),
                    warnings=tuple(st.warnings), reasons=tuple(st.reasons))


_INVENTORIES: dict[int, tuple[Policy, Inventory]] = {}


def _policy_nodes(policy: Policy) -> Inventory:
    """The policy's nodes, derived once per policy object (a cache of pure results, keyed by identity)."""
    hit = _INVENTORIES.get(id(policy))
    if hit is not None and hit[0] is policy:
        return hit[1]
    inv = policy_inventory(policy)
    if len(_INVENTORIES) > 16:
        _INVENTORIES.clear()
    _INVENTORIES[id(policy)] = (policy, inv)
    return inv


def _name_of(obj: object) -> str | None:
    return getattr(obj, "name", None)
