# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu why JOBID [--json] [--policy FILE]``: why a pending job waits, in plain words (thin CLI).

Reads Slurm through the one runner (:func:`slurm_gpu.adapters.slurm.run_slurm`): squeue's JSON (the job,
then every job: the one job reader, docs/records.md), ``scontrol show node -o``, ``scontrol show partition
-o`` and ``sacctmgr -nP show qos``; the decision is :func:`slurm_gpu.cluster.why.explain` (pure).
Exit codes: 0 explained (pending or not), 1 unknown job, Slurm failure, an answer for another job id or
invalid policy, 2 usage (a job id outside Slurm's range: :mod:`slurm_gpu.slurm.job_id`).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import click

from slurm_gpu.errors import SlurmGpuError, UsageError
from slurm_gpu.slurm.job_id import JobId, parse_job_id

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from slurm_gpu.cluster.why import Why
    from slurm_gpu.policy.model import Policy


def _read(argv: list[str], ok_fail: str | None = None) -> str | None:
    """stdout of one Slurm command; None when it fails with ``ok_fail`` in stderr."""
    from slurm_gpu.adapters.slurm import failure, run_slurm

    proc = run_slurm(argv)
    if proc.returncode != 0:
        if ok_fail is not None and ok_fail in proc.stderr:
            return None
        raise failure(" ".join(argv[:3]), proc.stderr, rc=proc.returncode)
    return proc.stdout


def _policy(path_opt: str | None) -> Policy | None:
    from slurm_gpu.policy import load_policy
    from slurm_gpu.policy.reader import policy_path

    path = policy_path(path_opt, os.environ)
    return None if path is None else load_policy(path)


def records_for(jid: JobId, jobs: Iterable[Mapping[str, str]], filtered: bool = True) -> list[Mapping[str, str]]:
    """The job records (the one job reader's fields) that carry the id asked for. ``filtered``: the answer
    was for that id only (squeue --json honours -j from 24.11; 22.05's prints every job): then an answer
    holding none of them (Slurm read the id as another) is a SlurmGpuError of one line."""
    answered = list(jobs)
    records = [r for r in answered if jid.carried_by(r)]
    if filtered and answered and not records:
        raise SlurmGpuError(f"job {jid}: squeue answered for job {answered[0].get('JobId', '?')[:40]} instead")
    return records


def gather_and_explain(job_id: str, policy_opt: str | None) -> Why | None:
    from slurm_gpu.adapters.slurm import SbatchCli
    from slurm_gpu.cluster import why as w
    from slurm_gpu.slurm.records import parse_node_fields

    jid = parse_job_id(job_id)  # 1..4294967293, 1234_5, 1234+1: Slurm would read 0 as every job, wrap the rest
    client = SbatchCli()
    client.preflight()  # a SLURM_CONF naming no file: one line now, not a client retrying for a minute
    records = records_for(jid, [j.fields for j in client.job_records([jid.job]).jobs],
                          filtered=client.spelling().squeue_json_filters)
    if not records:
        return None
    job = next((r for r in records if r.get("JobState", "").startswith("PENDING")), records[0])
    if not job.get("JobState", "").startswith("PENDING"):
        return w.explain(job)
    policy = _policy(policy_opt)
    read = client.job_records()
    jobs = [j.fields for j in read.jobs]
    nodes = parse_node_fields(_read(["scontrol", "show", "node", "-o"]) or "")
    parts = w.parse_records(_read(["scontrol", "show", "partition", "-o"]) or "", "PartitionName")
    try:  # accounting may be down: the QOS limits then come from the policy
        qos = w.parse_qos(_read(["sacctmgr", "-nP", "show", "qos", f"format={w.QOS_FORMAT}"]) or "")
    except SlurmGpuError:
        qos = None
    return w.explain(job, jobs=jobs, nodes=nodes, partitions=parts, qos=qos, policy=policy)


def with_estimates(answer: Why) -> Why:
    """Each alternative with Slurm's own verdict: ``sbatch --test-only`` of the job's partition, QOS and
    time with the alternative's GPUs (the site's job_submit plugin sees it too); nothing is queued."""
    from slurm_gpu.adapters.fs import create_private
    from slurm_gpu.adapters.slurm import SbatchCli
    from slurm_gpu.cluster.why import test_only_options

    if not answer.alternatives:
        return answer
    client = SbatchCli()
    out = []
    script = create_private(os.environ.get("TMPDIR") or "/tmp", "slurm-gpu-why.", ".sh", b"#!/bin/sh\ntrue\n")
    try:
        for alt in answer.alternatives:
            try:
                r = client.test_only(test_only_options(answer, alt), script)
                note = f"would start at {r.start}" + (f" on {r.nodes}" if r.nodes else "")
            except SlurmGpuError as exc:
                note = f"refused: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            out.append(alt._replace(slurm_estimate=note))
    finally:
        os.unlink(script)
    return answer._replace(alternatives=tuple(out))


@click.command("why", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("job_id", metavar="JOBID")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON (keys: docs/why.md).")
@click.option("--policy", "policy_opt", default=None, metavar="FILE",
              help="Site policy [$GPUSUB_POLICY, then /etc/slurm-gpu/policy.yaml; none: Slurm's limits only].")
@click.option("--estimate/--no-estimate", default=True,
              help="Ask Slurm (sbatch --test-only) when each suggested request would start [on].")
def why(job_id: str, as_json: bool, policy_opt: str | None, estimate: bool) -> None:
    """Why JOBID is pending: Slurm's reason in plain words, the limit that holds it and by how much,
    where it could run, Slurm's start estimate, and GPU requests (gpusub options) that would start now."""
    from slurm_gpu.cluster.why_text import lines, to_json

    try:
        answer = gather_and_explain(job_id, policy_opt)
        if answer is not None and estimate:
            answer = with_estimates(answer)
    except UsageError as exc:
        raise click.UsageError(str(exc).splitlines()[0]) from None
    except SlurmGpuError as exc:
        raise click.ClickException(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    if answer is None:
        raise click.ClickException(f"job {job_id}: unknown to Slurm (never submitted, or finished and purged)")
    click.echo(json.dumps(to_json(answer), indent=2) if as_json else "\n".join(lines(answer)))
