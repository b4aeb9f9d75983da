# SPDX-License-Identifier: Apache-2.0
"""gpusub ``--mig PROFILE:COUNT[,...]`` and ``--mps PERCENT``: the submission with the slurm-gpu token
in its ``--comment`` and, when the job names no GPUs, one whole GPU to carry it. Pure (data in, data
out); imported only when one of the two options is given.

- ``--mig``: a per-job MIG layout on each of the job's whole GPUs (node types in ``mig_mode: dynamic``).
  Without GPU options the job gets ``--gres=gpu:<type>:1`` of the first GPU type (policy order) whose
  dynamic node type (in the job's ``--partition``, when it names one) serves the layout.
- ``--mps``: a per-job MPS daemon on the job's whole GPUs, each client limited to PERCENT of the
  GPU's threads. Without GPU options the job gets ``--gres=gpu:1``, typed by the policy as any
  untyped request.

The token goes into ``--comment`` with :func:`slurm_gpu.sharing.token.with_token` (the rest of the user's
comment is kept; a slurm-gpu token already there is replaced), and the renderer quotes it as every
value. Whether the policy allows the request is the classifier's ``check_sharing`` step, the one that
job_submit.lua mirrors: a refusal there is a rejection (exit 1). The option values themselves were
checked when they were parsed (``slurm_gpu.slurm.sbatch.getopt``): a bad one is a usage error (exit 2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from slurm_gpu.errors import Rejected, UsageError
from slurm_gpu.sharing import token as token
from slurm_gpu.slurm.sbatch.table import GpusubOptions

if TYPE_CHECKING:
    from slurm_gpu.policy.model import Policy
    from slurm_gpu.slurm.sbatch.parse import Submission

EXCLUSIVE = "--mig and --mps exclude each other: the job's GPUs get a MIG layout or an MPS share"
NO_POLICY = ("--mig/--mps need a site policy (--policy, $GPUSUB_POLICY or /etc/slurm-gpu/policy.yaml) to check "
             "them against")
NOT_HETJOB = "--mig/--mps: not for heterogeneous jobs (give the token to one component with --comment)"
NOT_FRACTION = "--mig/--mps go with whole GPUs (--gpus=TYPE:N), not with --gpu-fraction"


def requested(gpusub_opts: GpusubOptions) -> token.JobRequest | None:
    """The request of ``--mig``/``--mps`` (values already checked by the parser), or None."""
    mig, mps = gpusub_opts.mig, gpusub_opts.mps
    if mig is None and mps is None:
        return None
    if mig is not None and mps is not None:
        raise UsageError(EXCLUSIVE)
    try:
        if mig is not None:
            return token.JobRequest(mig=token.parse_mig_spec(mig))
        return token.JobRequest(mps_pct=token.parse_mps_pct(str(mps)))
    except token.RequestError as exc:  # the parser checked it already; kept total
        raise UsageError(f"--{'mig' if mig is not None else 'mps'}: {exc}") from None


def dynamic_gpu_type(spec: token.MigSpec, policy: Policy, partition: str | None) -> str:
    """The GPU type of the first dynamic-MIG node type (policy order, within ``partition`` if given)
    that serves ``spec``; :class:`Rejected` with the first reason when none does."""
    from slurm_gpu.sharing.mig import MigError, check_request

    part = policy.partition(partition) if partition else None
    names = part.node_types if part is not None else tuple(nt.name for nt in policy.node_types)
    why = "no node type is in dynamic MIG mode" + (f" in partition {partition}" if partition else "")
    for name in names:
        nt = policy.node_type(name)
        if nt is None or not nt.gpu_type or nt.gpus <= 0 or nt.mig_mode != "dynamic":
            continue
        try:
            check_request(spec, policy, nt)
        except MigError as exc:
            why = str(exc)
            continue
        return str(nt.gpu_type)
    raise Rejected(f"rejected by policy: --mig {token.format_mig_spec(spec)}: {why}")


def with_sharing(sub: Submission, policy: Policy | None) -> Submission:
    """``sub`` with the token in its comment and, without GPU options, the GPU that carries it."""
    req = requested(sub.gpusub)
    if req is None:
        return sub
    if policy is None:
        raise UsageError(NO_POLICY)
    if getattr(sub, "is_hetjob", False):
        raise UsageError(NOT_HETJOB)
    if sub.gpusub.gpu_fraction:
        raise UsageError(NOT_FRACTION)
    from dataclasses import replace

    from slurm_gpu.slurm.sbatch.to_request import gpu_forms

    options = [(k, v) for k, v in sub.options if k != "comment"]
    options.append(("comment", token.with_token(sub.get("comment"), req)))
    forms = gpu_forms(sub.get)
    if not any(forms[:4]) and sub.get("ntasks-per-gpu") is None and sub.get("ntasks-per-tres") is None:
        partition = (sub.get("partition") or "").split(",")[0] or None
        gtype = dynamic_gpu_type(req.mig, policy, partition) if req.mig else None
        options.append(("gres", f"gpu:{gtype}:1" if gtype else "gpu:1"))
    return replace(sub, options=tuple(options), components=())


__all__ = ["requested", "dynamic_gpu_type", "with_sharing"]
