# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu jobstats JOBID [--json] [--policy FILE]``: a job's (or an array's) per-GPU utilisation, peak
memory and energy from its AdminComment summary, CPU and memory efficiency from sacct, and notes with
numbers (docs/report.md "jobstats"). Exit codes: 0 shown, 1 unknown job, Slurm failure, an answer for
another job id or invalid policy, 2 usage (a job id outside Slurm's range: :mod:`slurm_gpu.slurm.job_id`)."""

from __future__ import annotations

import json

import click


@click.command("jobstats", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("job_id", metavar="JOBID")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON document (docs/report.md).")
@click.option("--policy", "policy_opt", default=None, metavar="FILE",
              help="Site policy for GPU memory and MIG advice [$GPUSUB_POLICY, then /etc/slurm-gpu/policy.yaml].")
def jobstats(job_id: str, as_json: bool, policy_opt: str | None) -> None:
    """GPU, CPU and memory efficiency of JOBID (1234, an array task 1234_5, a whole array 1234_*, or a
    hetjob component 1234+1)."""
    from slurm_gpu.cluster.jobstats import lines
    from slurm_gpu.cluster.jobstats_io import gather
    from slurm_gpu.errors import SlurmGpuError, UsageError

    try:
        doc = gather(job_id, policy_opt)
    except UsageError as exc:
        raise click.UsageError(str(exc).splitlines()[0]) from None
    except SlurmGpuError as exc:
        raise click.ClickException(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    click.echo(json.dumps(doc, indent=1) if as_json else "\n".join(lines(doc)))
