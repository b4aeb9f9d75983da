# SPDX-License-Identifier: Apache-2.0
"""``classify_job``: a job of one or more components (a heterogeneous job), each classified on its own,
then the two rules that belong to the job as a whole (docs/policy.md "Heterogeneous jobs").

slurmctld hands a hetjob's components to job_submit one at a time, in order, before it creates any of
them, and the plugin never learns how many follow (src/slurmctld/proc_req.c,
``_slurm_rpc_submit_batch_het_job``). The job-level rules are written so that the generated Lua, which
keeps what it saw of the job's earlier components, decides them exactly as this function does:

- **GPU jobs only.** A component that asks for no GPU and fits no class (``no_class``) is no CPU-only
  job when the job has GPUs: it is accepted as the CPU part of a GPU job (no class, nothing added:
  Slurm's own partition and QOS defaults, or the user's) when a component before it asks for GPUs, or,
  for the first component, the second one does. Otherwise the job is refused with the ``no_class``
  message (a GPU part third or later, after CPU parts that fit no class, is refused: put it first).
- **Per-user GPU cap.** Slurm counts every component against a user's limits (heterogeneous_jobs.html
  "Limits"; ``acct_policy_validate_het_job`` sums the components that share an association): the GPUs
  of the components in one QOS are summed against that QOS's ``max_gpus_per_user``; the first
  component that takes the sum over it is refused with ``over_user_cap``.

Everything else (class, partition, QOS, GPU type, per-job GPU limits, time limit, defaults) is per
component, as Slurm validates each component like a regular job.
"""

from __future__ import annotations

from collections.abc import Sequence

from slurm_gpu.policy.classifier.steps import classify
from slurm_gpu.policy.model import Policy
from slurm_gpu.policy.nodes import Inventory
from slurm_gpu.request import Decision, JobRequest


def asks_for_gpus(r: JobRequest) -> bool:
    """Whether a component asks for any GPU: whole GPUs, a fraction, MPS shares, shards or a model to fit."""
    return bool(r.total_gpus or r.gpu_fraction is not None or r.model_params is not None or r.mps or r.shards)


def _cpu_part(d: Decision, k: int, by: int) -> Decision:
    return Decision(True, warnings=d.warnings, reasons=(
        *(x for x in d.reasons if not x.startswith("rejected: ")),
        f"hetjob component {k}: the CPU part of a GPU job (component {by} asks for GPUs): no class, "
        "nothing added (Slurm's partition and QOS defaults, or the user's)"))


def _over_cap(policy: Policy, d: Decision, total: int, limit: int, k: int) -> Decision:
    msg = policy.message("over_user_cap", gpus=total, qos=d.qos or "", limit=limit)
    return Decision(False, job_class=d.job_class, partition=d.partition, qos=d.qos, warnings=d.warnings,
                    reasons=(*d.reasons, f"hetjob component {k}: {total} GPUs in QOS {d.qos} over the job's "
                             f"components > max_gpus_per_user {limit}", f"rejected: {msg}"),
                    message=msg, fix=f"ask for at most {limit} GPUs over the job's components in QOS {d.qos}",
                    key="over_user_cap")


def classify_job(requests: Sequence[JobRequest], policy: Policy,
                 inventory: Inventory | None = None) -> tuple[Decision, ...]:
    """One Decision per component (a plain job: one). Pure and total, as :func:`classify`;
    ``inventory``: what the nodes offer (policy.nodes), None: the policy's own nodes."""
    decisions = [classify(r, policy, inventory) for r in requests]
    if len(requests) < 2:
        return tuple(decisions)
    gpus = [asks_for_gpus(r) for r in requests]
    for k, d in enumerate(decisions):
        if d.accepted or d.key != "no_class" or gpus[k]:
            continue
        by = next((j for j in range(k) if gpus[j]), None)
        if by is None and k == 0 and gpus[1]:
            by = 1
        if by is not None:
            decisions[k] = _cpu_part(d, k, by)
    summed: dict[str, int] = {}
    for k, d in enumerate(decisions):
        q = policy.qos_named(d.qos) if d.accepted and d.gpus and d.qos else None
        if q is None or d.qos is None:
            continue
        summed[d.qos] = summed.get(d.qos, 0) + d.gpus
        if q.max_gpus_per_user is not None and summed[d.qos] > q.max_gpus_per_user:
            decisions[k] = _over_cap(policy, d, summed[d.qos], q.max_gpus_per_user, k)
            break
    return tuple(decisions)


def job_verdict(decisions: Sequence[Decision]) -> Decision:
    """The job's verdict: its first refused component's decision, else the first component's."""
    return next((d for d in decisions if not d.accepted), decisions[0])
