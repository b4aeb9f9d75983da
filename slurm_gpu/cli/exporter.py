# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu exporter --textfile DIR [--stats FILE] [--no-cluster] [--records DIR]``: the cluster view's
GPU counts and fragmentation, and the hooks' per-GPU job records, in node_exporter's textfile format
(``DIR/slurm_gpu.prom``, written to a temporary file and renamed; docs/report.md "Prometheus").
Exit codes: 0 written, 1 Slurm failure, 2 usage (DIR not a directory, an unreadable stats file)."""

from __future__ import annotations

import sys

import click


@click.command("exporter", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--textfile", "textfile", required=True, metavar="DIR",
              help="node_exporter's --collector.textfile.directory.")
@click.option("--stats", "stats_file", default=None, metavar="FILE",
              help="The hooks' JSON-lines records (/var/log/slurm-gpu/gpu-jobs.jsonl): job-level GPU metrics.")
@click.option("--no-cluster", is_flag=True, help="Job metrics only (a compute node without Slurm client access).")
@click.option("--records", type=click.Path(file_okay=False), default=None,
              help="Read recorded scontrol outputs from DIR instead of asking Slurm (as slurm-gpu cluster).")
def exporter(textfile: str, stats_file: str | None, no_cluster: bool, records: str | None) -> None:
    """Write the metrics file for node_exporter's textfile collector."""
    from slurm_gpu.cluster.exporter import exposition
    from slurm_gpu.cluster.report_io import exporter_text, read_stats_records, write_textfile
    from slurm_gpu.errors import SlurmGpuError

    try:
        if no_cluster:
            text = exposition(None, read_stats_records(stats_file) if stats_file else [])
        else:
            text = exporter_text(records, stats_file)
        write_textfile(textfile, text)
    except SlurmGpuError as exc:  # one line; 2 for a usage error (a directory root must not write), else 1
        click.echo(f"slurm-gpu exporter: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", err=True)
        sys.exit(exc.exit_code)
