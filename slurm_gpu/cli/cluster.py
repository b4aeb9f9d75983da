# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu cluster [--json] [--watch [SECONDS]] [--full] [--records DIR]``: free, allocated,
unavailable and stranded GPUs per type and partition, the largest job that can start, fragmentation,
and a picture of every node's GPUs (docs/cluster.md).

Exit codes: 0 shown (records that could not be read are left out, one stderr line each), 1 Slurm failed or
could not be reached, 2 usage (a bad option, an unreadable --records directory: missing nodes.txt, a FIFO,
a file over 256 MiB, a nodes.txt with no node record, a jobs.json that is no squeue --json document).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable

import click

CLEAR = "\033[H\033[2J"


def watch_loop(show: Callable[[], str], interval: float, count: int | None, echo: Callable[[str], None],
               sleep: Callable[[float], None] = time.sleep, clear: bool = False) -> int:
    """Show ``show()`` every ``interval`` seconds, ``count`` times (None: until interrupted); returns the
    number of refreshes shown."""
    shown = 0
    while count is None or shown < count:
        text = show()
        echo((CLEAR if clear else "") + text)
        shown += 1
        if count is not None and shown >= count:
            break
        sleep(interval)
    return shown


def _finite(value: float | None) -> float | None:
    """FloatRange lets NaN through (every comparison with it is false)."""
    if value is not None and value != value:
        raise click.BadParameter("a number of seconds, 0.5 to 86400")
    return value


@click.command("cluster", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--json", "as_json", is_flag=True,
              help="Print the JSON document (docs/cluster.md) instead of the picture.")
@click.option("--watch", type=click.FloatRange(min=0.5, max=86400), is_flag=False, flag_value=5.0, default=None,
              callback=lambda ctx, p, v: _finite(v),
              metavar="[SECONDS]", help="Refresh every SECONDS (default 5) until interrupted.")
@click.option("--full", is_flag=True, help="One row per node even beyond 64 GPU nodes.")
@click.option("--records", type=click.Path(file_okay=False), default=None,
              help="Read recorded outputs from DIR (nodes.txt, jobs.json, partitions.txt, gres.conf: "
                   "docs/cluster.md) instead of asking Slurm.")
@click.option("--count", type=click.IntRange(min=1), default=None, hidden=True,
              help="With --watch: stop after N refreshes (tests).")
def cluster(as_json: bool, watch: float | None, full: bool, records: str | None, count: int | None) -> None:
    """Where GPUs are free now, per GPU type and partition, and what can start there."""
    from slurm_gpu.cluster.view import from_texts, picture
    from slurm_gpu.errors import SlurmGpuError, UsageError
    from slurm_gpu.ports import ClusterSource

    source: ClusterSource
    if records is not None:
        from slurm_gpu.adapters.slurm.recorded import RecordedCluster

        source = RecordedCluster(records)
    else:
        from slurm_gpu.adapters.slurm import SbatchCli

        source = SbatchCli()

    def show() -> str:
        nodes_text = source.nodes_text()
        view = from_texts(nodes_text, source.jobs_json(), source.partitions_text(), source.gres_conf_text(),
                          source.topology_text())
        for problem in view.problems:
            click.echo(f"slurm-gpu cluster: {problem}", err=True)
        if records is not None and not view.nodes and nodes_text.strip():
            raise UsageError(f"{os.path.join(records, 'nodes.txt')}: no node record in it (expected the output "
                             "of scontrol show node -d -o)")
        if as_json:
            return json.dumps(view.summary, indent=1)
        return picture(view, max_rows=1 << 30 if full else 64).rstrip("\n")

    try:
        if watch is None:
            click.echo(show())
        else:
            watch_loop(show, watch, count, click.echo, clear=not as_json and sys.stdout.isatty())
    except SlurmGpuError as exc:
        click.echo(f"slurm-gpu cluster: {str(exc).splitlines()[0]}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(0)
