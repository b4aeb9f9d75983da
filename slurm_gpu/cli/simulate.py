# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu simulate --policy P [--policy P2 ...] --trace T --out DIR``: replay a job trace through
site policies and a model of Slurm's scheduler (docs/simulate.md). ``--replay-in-lab`` /
``--replay-from RECORD``: the validation against real Slurm (slurm_gpu/app/replay.py).

Exit codes: 0 simulated, 1 a bad trace or policy, 2 usage (a bad option, a missing or unreadable file).
"""

from __future__ import annotations

import sys

import click


@click.command("simulate", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--policy", "policies", multiple=True, required=True, type=click.Path(dir_okay=False),
              help="A site policy (repeat to compare several side by side).")
@click.option("--trace", required=True, type=click.Path(dir_okay=False), help="The job trace.")
@click.option("--format", "fmt", type=click.Choice(["csv", "sacct", "swf"]), default=None,
              help="The trace's format (default: from its first line).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Output directory.")
@click.option("--no-backfill", is_flag=True, help="The main scheduler only (sched/builtin).")
@click.option("--bf-window", default="1440", show_default=True, help="bf_window (Slurm time: minutes, H:M:S, ...).")
@click.option("--bf-interval", default="30s", show_default=True, help="bf_interval (90s, 2m, ...).")
@click.option("--bf-max-job-test", type=click.IntRange(min=1), default=500, show_default=True)
@click.option("--preempt-type", type=click.Choice(["partition_prio", "qos", "off"]), default="partition_prio",
              show_default=True)
@click.option("--ckpt-interval", default="0", show_default=True,
              help="The jobs' checkpoint interval (0: none; a preempted run loses all its work).")
@click.option("--fairshare-weight", type=click.IntRange(min=0), default=0, show_default=True,
              help="PriorityWeightFairshare (classic fair share; 0: off).")
@click.option("--replay-in-lab", is_flag=True,
              help="Submit the compressed trace to the lab (SLURM_CONF) as sleep jobs, record the real starts "
                   "into OUT/lab-replay.csv and compare them with the simulation under the lab's parameters.")
@click.option("--replay-from", type=click.Path(dir_okay=False), default=None,
              help="Compare a recorded replay (a lab-replay.csv) with the simulation, without the lab.")
@click.option("--compress", "factor", type=click.FloatRange(min=1), default=15.0, show_default=True,
              help="Replay: the time compression (submit and run times divided by it; limits in whole minutes).")
@click.option("--lab-user", default="labuser", show_default=True, help="Replay: the user who submits.")
def simulate(policies: tuple[str, ...], trace: str, fmt: str | None, out_dir: str, no_backfill: bool,
             bf_window: str, bf_interval: str, bf_max_job_test: int, preempt_type: str, ckpt_interval: str,
             fairshare_weight: int, replay_in_lab: bool, replay_from: str | None, factor: float,
             lab_user: str) -> None:
    """Replay a job trace through one or more site policies and Slurm's scheduler model."""
    from slurm_gpu.errors import SlurmGpuError

    if replay_in_lab or replay_from:
        if len(policies) != 1 or (replay_in_lab and replay_from):
            raise click.UsageError("a replay takes one --policy, and --replay-in-lab or --replay-from, not both")
        from slurm_gpu.app import replay

        try:
            if replay_in_lab:
                text = replay.replay_in_lab(policies[0], trace, out_dir, factor, fmt, lab_user,
                                            say=lambda m: click.echo(m, err=True))
            else:
                assert replay_from is not None
                text = replay.replay_from(policies[0], trace, out_dir, factor, replay_from, fmt)
        except SlurmGpuError as exc:
            click.echo(f"slurm-gpu simulate: {str(exc).splitlines()[0]}", err=True)
            sys.exit(exc.exit_code)
        click.echo(text, nl=False)
        return
    from slurm_gpu.sim.params import Params
    from slurm_gpu.units import UnitError, parse_time_seconds

    try:
        times = {name: parse_time_seconds(v) for name, v in
                 (("--bf-window", bf_window), ("--bf-interval", bf_interval), ("--ckpt-interval", ckpt_interval))}
    except UnitError as exc:
        raise click.UsageError(str(exc)) from None
    if times["--bf-interval"] < 1:
        raise click.UsageError("--bf-interval must be at least 1 second")
    params = Params(backfill=not no_backfill, bf_window_s=times["--bf-window"], bf_interval_s=times["--bf-interval"],
                    bf_max_job_test=bf_max_job_test, preempt_type=preempt_type,  # type: ignore[arg-type]
                    ckpt_interval_s=times["--ckpt-interval"], weight_fairshare=fairshare_weight)
    from slurm_gpu.app.simulate import run

    try:
        click.echo(run(list(policies), trace, out_dir, params, fmt), nl=False)
    except SlurmGpuError as exc:
        click.echo(f"slurm-gpu simulate: {str(exc).splitlines()[0]}", err=True)
        sys.exit(exc.exit_code)
