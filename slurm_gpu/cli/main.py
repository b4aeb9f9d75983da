# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu``: the admin and tool CLI. Subcommands load lazily so ``--help`` stays fast."""

from __future__ import annotations

import importlib

import click

from slurm_gpu import __version__

# name -> "module:attribute"; the one table of verbs (no copied registration lines).
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "admin": ("slurm_gpu.cli.admin:admin", "Emit slurm.conf, gres.conf and QOS commands from a site policy."),
    "ckpt": ("slurm_gpu.cli.ckpt:ckpt", "Checkpointing: Young/Daly interval advice (the job side is gpusub-ckpt)."),
    "cluster": ("slurm_gpu.cli.cluster:cluster", "Free, allocated and stranded GPUs, fragmentation, per type."),
    "exporter": ("slurm_gpu.cli.exporter:exporter", "Write GPU metrics for node_exporter's textfile collector."),
    "jobstats": ("slurm_gpu.cli.jobstats:jobstats", "A job's GPU, CPU and memory efficiency, with notes."),
    "lab": ("slurm_gpu.cli.lab:lab", "Run a real local Slurm with emulated GPU nodes."),
    "policy": ("slurm_gpu.cli.policy:policy", "Check and inspect site policy files."),
    "report": ("slurm_gpu.cli.report:report", "GPU-hours, efficiency, waits, cost; --autoscale: scaling signal."),
    "simulate": ("slurm_gpu.cli.simulate:simulate", "Replay a job trace through site policies and Slurm's scheduler."),
    "topo": ("slurm_gpu.cli.topo:topo", "Parse node topology; generate gres.conf and slurm.conf lines."),
    "why": ("slurm_gpu.cli.why:why", "Why a pending job waits, and what would start now."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in SUBCOMMANDS:
            return None
        module_name, _, attr = SUBCOMMANDS[cmd_name][0].partition(":")
        command: click.Command = getattr(importlib.import_module(module_name), attr)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Short help without importing every verb.
        rows = [(name, SUBCOMMANDS[name][1]) for name in sorted(SUBCOMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="slurm-gpu")
def cli() -> None:
    """slurm-gpu: GPU jobs on Slurm that land in the right place and run well there."""


def main() -> None:
    cli(prog_name="slurm-gpu")


if __name__ == "__main__":
    main()
