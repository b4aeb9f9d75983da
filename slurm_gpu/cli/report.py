# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu report [--since 7d] [--until T] [--by user|account|partition|class] [--jobs LIST] [--json]
[--html FILE] [--autoscale] [--policy FILE]``: GPU-hours allocated and effective, aggregate efficiency,
idle GPU-hours, queue waits, preemptions and cost per effective GPU-hour; with ``--autoscale`` the
scaling signal per GPU type (docs/report.md). Exit codes: 0 shown, 1 Slurm failure or invalid policy,
2 usage."""

from __future__ import annotations

import json
import sys

import click


@click.command("report", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--since", default="7d", show_default=True, metavar="T",
              help="Start of the window: a duration before now (7d, 12h, 90m) or a date (2026-11-01[T08:00]).")
@click.option("--until", default="now", show_default=True, metavar="T", help="End of the window (same forms).")
@click.option("--by", type=click.Choice(["user", "account", "partition", "class"]), default=None,
              help="Also break the figures down by this key.")
@click.option("--jobs", default=None, metavar="LIST",
              help="Only these jobs (comma-separated ids, as sacct -j), within the window.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON document (docs/report.md).")
@click.option("--html", "html_file", default=None, metavar="FILE",
              help="Also write the report as one self-contained HTML file with charts.")
@click.option("--autoscale", is_flag=True,
              help="Print the scaling signal per GPU type (pending demand, E, recommendation) instead.")
@click.option("--policy", "policy_opt", default=None, metavar="FILE",
              help="Site policy: classes, prices, autoscale thresholds [$GPUSUB_POLICY, then "
                   "/etc/slurm-gpu/policy.yaml; none: by partition, no prices, default thresholds].")
def report(since: str, until: str, by: str | None, jobs: str | None, as_json: bool, html_file: str | None,
           autoscale: bool, policy_opt: str | None) -> None:
    """How much of the GPU time allocated was used, by whom, at what cost; and whether to scale."""
    from slurm_gpu.cluster import autoscale as scale
    from slurm_gpu.cluster import report as rep
    from slurm_gpu.cluster.report_io import check_output_dir, gather_autoscale, gather_docs, write_html
    from slurm_gpu.errors import SlurmGpuError

    try:
        if html_file is not None:
            check_output_dir(html_file)  # refused before sacct is asked (root: no directory a user can write)
        # one pass over the streamed rows: --by's figures and, for --html, the by-account ones
        docs, _start, _end, policy = gather_docs(since, until, (by, "account") if html_file else (by,),
                                                 policy_opt, jobs=jobs)
        doc = docs[0]
        if html_file is not None:
            write_html(html_file, doc, docs[1])
        signal = gather_autoscale(doc, policy) if autoscale else None
    except SlurmGpuError as exc:  # one line; 2 for a usage error (a directory root must not write), else 1
        click.echo(f"slurm-gpu report: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", err=True)
        sys.exit(exc.exit_code)
    if as_json:
        click.echo(json.dumps(doc if signal is None else signal, indent=1))
    else:
        click.echo("\n".join(rep.lines(doc) if signal is None else scale.lines(signal)))
