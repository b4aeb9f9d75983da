# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu ckpt advise``: how often to checkpoint (Young and Daly). Exit codes: 0 printed, 1 Slurm
failed or no interruption in the window (``--partition``), 2 usage.
The job-side marker tool is ``gpusub-ckpt`` (cli/ckpt_mark.py, no click)."""

from __future__ import annotations

import json

import click

ADVISE_HELP = """Print Young's and Daly's checkpoint intervals for a checkpoint cost C and a mean time to
interruption M, with the expected overhead and the work lost per interruption at each.

\b
  Young:    tau = sqrt(2 C M)
  Daly:     tau = sqrt(2 C M) (1 + sqrt(C/(2M))/3 + C/(18 M)) - C   if C < 2M, else M
  overhead: (M/tau) e^(R/M) (e^((tau+C)/M) - 1) - 1                 (~ C/tau + tau/(2M))
  lost:     M - (tau+C) / (e^((tau+C)/M) - 1)                       (~ (tau+C)/2, at most tau+C)

tau is the work between two checkpoints; R the restart cost. --cost and --restart: a bare number is
seconds (60, 12.5) or a duration (90s, 5m). --mtti: a duration (6h, 2d, 2-00:00:00; a bare number is
minutes, as Slurm reads times). --partition P estimates M from sacct: the runs' total elapsed time over
those that ended PREEMPTED, NODE_FAIL, BOOT_FAIL or REQUEUED, since --since. Exit codes: 0; 1 Slurm
failed or no interruption in the window; 2 usage. docs/checkpointing.md."""


@click.group("ckpt")
def ckpt() -> None:
    """Checkpointing: interval advice (the job side is gpusub-ckpt)."""


@ckpt.command("advise", help=ADVISE_HELP)
@click.option("--cost", "cost", required=True, metavar="SECONDS", help="Seconds to write one checkpoint (C).")
@click.option("--mtti", "mtti", metavar="DURATION", help="Mean time to interruption (M).")
@click.option("--partition", "partition", metavar="P",
              help="Estimate M from the partition's accounting (sacct) instead of --mtti.")
@click.option("--since", "since", default="now-30days", show_default=True, metavar="TIME",
              help="With --partition: the start of the window (sacct -S).")
@click.option("--restart", "restart", default="0", show_default=True, metavar="SECONDS",
              help="Seconds from a restart to work again (R).")
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as JSON (seconds, fractions).")
def advise(cost: str, mtti: str | None, partition: str | None, since: str, restart: str, as_json: bool) -> None:
    from slurm_gpu.checkpoint import advise as adv

    if (mtti is None) == (partition is None):
        raise click.UsageError("give one of --mtti DURATION and --partition P")
    try:
        c, r = adv.parse_seconds(cost), adv.parse_seconds(restart)
        m = adv.parse_mtti(mtti) if mtti is not None else _partition_mtti(str(partition), since, as_json)
        a = adv.advise(c, m, r)
    except adv.AdviceError as exc:
        raise click.UsageError(str(exc)) from None
    if as_json:
        click.echo(json.dumps({k: getattr(a, k) for k in (
            "cost_s", "mtti_s", "restart_s", "young_s", "daly_s", "young_overhead", "daly_overhead",
            "young_lost_s", "daly_lost_s")}, indent=1))
        return
    fs = adv.format_seconds

    def dur(s: float) -> str:
        return f"{s:.2f} s ({fs(s)})"

    click.echo(f"checkpoint cost C:  {dur(a.cost_s)}")
    click.echo(f"MTTI M:             {dur(a.mtti_s)}")
    click.echo(f"restart cost R:     {dur(a.restart_s)}")
    click.echo(f"{'':17} {'interval (work between checkpoints)':36} {'overhead':>9}   lost per interruption")
    for name, t, o, lost in (("Young", a.young_s, a.young_overhead, a.young_lost_s),
                             ("Daly", a.daly_s, a.daly_overhead, a.daly_lost_s)):
        click.echo(f"{name:17} {dur(t):36} {o * 100:8.2f}%   {dur(lost)}")
    click.echo(f"Checkpoint every {fs(a.daly_s)} of work (Daly); an interruption then loses "
               f"{fs(a.daly_lost_s)} on average, at most {fs(a.daly_s + a.cost_s)} (one interval and one checkpoint).")


def _partition_mtti(partition: str, since: str, quiet: bool) -> float:
    """The partition's MTTI from sacct (checkpoint/mtti.py); exit 1 when Slurm fails or no run was
    interrupted in the window."""
    from slurm_gpu.adapters.slurm.runner import run_slurm
    from slurm_gpu.checkpoint.advise import format_seconds
    from slurm_gpu.checkpoint.mtti import SACCT_FIELDS, estimate
    from slurm_gpu.errors import SlurmGpuError

    for name, value in (("--partition", partition), ("--since", since)):
        if not value or len(value) > 64 or not all(ch.isalnum() or ch in "-_.:+,/" for ch in value):
            raise click.UsageError(f"{name} {value[:40]!r}: expected a Slurm name or time")
    try:
        proc = run_slurm(["sacct", "-a", "-X", "-D", "-P", "-n", "-r", partition, "-S", since, "-E", "now",
                          "-o", SACCT_FIELDS], timeout_s=60, check=True)
    except SlurmGpuError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(1) from None
    est = estimate(proc.stdout)
    states = ", ".join(f"{n} {s}" for s, n in est.by_state) or "none"
    if est.mtti_s is None:
        click.echo(f"error: no interrupted run in partition {partition} since {since} ({est.runs} runs, "
                   f"{format_seconds(est.exposure_s)} of running time): the MTTI is longer than that; "
                   "give --mtti", err=True)
        raise SystemExit(1)
    if not quiet:
        click.echo(f"partition {partition} since {since}: {est.runs} runs, {format_seconds(est.exposure_s)} "
                   f"of running time, {est.interruptions} interruption{'s' * (est.interruptions != 1)} ({states})")
    return est.mtti_s
