# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu simulate --policy P [--policy P2 ...] --trace T --out DIR``: replay a job trace through
site policies and a model of Slurm's scheduler (docs/simulate.md). ``--replay-in-lab`` /
``--replay-from RECORD``: the validation against real Slurm (slurm_gpu/sim/replay.py).

Exit codes: 0 simulated, 1 a bad trace or policy, 2 usage (a bad option, a missing or unreadable file).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from slurm_gpu.sim.settings import SweepValue


@click.command("simulate", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--policy", "policies", multiple=True, required=True, type=click.Path(dir_okay=False),
              help="A site policy (repeat to compare several side by side).")
@click.option("--trace", default=None, type=click.Path(dir_okay=False),
              help="The job trace (or --workload).")
@click.option("--format", "fmt", type=click.Choice(["csv", "sacct", "swf", "alibaba"]), default=None,
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
              help="PriorityWeightFairshare (0: no fair share).")
@click.option("--fairshare", "fairshare", type=click.Choice(["classic", "fair-tree"]), default="classic",
              show_default=True, help="The fair-share algorithm (PriorityFlags=NO_FAIR_TREE or Slurm's Fair Tree).")
@click.option("--shares", default="", help="Raw shares per account path, e.g. phys=3,phys/theory=1,chem=1 "
              "(sacctmgr Fairshare=; unnamed accounts: 1 under root).")
@click.option("--billing-weights", default="GRES/gpu=1", show_default=True,
              help="TRESBillingWeights for fair-share usage: CPU=W,Mem=W[G],GRES/gpu=W.")
@click.option("--max-tres", is_flag=True, help="PriorityFlags=MAX_TRES: bill the largest weighted TRES, not the sum.")
@click.option("--allocator", type=click.Choice(["priority", "drf"]), default="priority", show_default=True,
              help="The order of pending jobs: Slurm's multifactor priority, or DRF (for comparison).")
@click.option("--sweep", default=None, metavar="PARAM=V1,V2,...",
              help="Simulate once per value (bf_window=60,240,1440); DIR/PARAM=V/ each, DIR/sweep.csv and a table.")
@click.option("--workload", default=None, type=click.Choice(["fragment", "gang-starve", "split"]),
              help="Generate an adversarial trace (written to DIR/workload-NAME.csv) instead of --trace.")
@click.option("--jobs", "n_jobs", type=click.IntRange(min=1, max=1_000_000), default=1000, show_default=True,
              help="--workload: jobs to generate.")
@click.option("--seed", type=int, default=14, show_default=True, help="--workload: the random seed.")
@click.option("--replay-in-lab", is_flag=True,
              help="Submit the compressed trace to the lab (SLURM_CONF) as sleep jobs, record the real starts "
                   "into OUT/lab-replay.csv and compare them with the simulation under the lab's parameters.")
@click.option("--replay-from", type=click.Path(dir_okay=False), multiple=True,
              help="Compare a recorded replay (a lab-replay.csv) with the simulation, without the lab; given "
                   "again, each further record is also compared with the first (real against real).")
@click.option("--json", "as_json", is_flag=True,
              help="Replay: print the figures (all jobs, per partition and QOS) as JSON (also written to "
                   "OUT/replay-summary.json).")
@click.option("--compress", "factor", type=click.FloatRange(min=1), default=15.0, show_default=True,
              help="Replay: the time compression (submit and run times divided by it; limits in whole minutes).")
@click.option("--lab-user", default="labuser", show_default=True, help="Replay: the user who submits.")
@click.option("--progress/--no-progress", default=None,
              help="A progress line on stderr every few seconds (default: when stderr is a terminal).")
def simulate(policies: tuple[str, ...], trace: str | None, fmt: str | None, out_dir: str, no_backfill: bool,
             bf_window: str, bf_interval: str, bf_max_job_test: int, preempt_type: str, ckpt_interval: str,
             fairshare_weight: int, fairshare: str, shares: str, billing_weights: str, max_tres: bool,
             allocator: str, sweep: str | None, workload: str | None, n_jobs: int, seed: int,
             replay_in_lab: bool, replay_from: tuple[str, ...], as_json: bool, factor: float, lab_user: str,
             progress: bool | None) -> None:
    """Replay a job trace through one or more site policies and Slurm's scheduler model."""
    from slurm_gpu.errors import SlurmGpuError

    if (trace is None) == (workload is None):
        raise click.UsageError("give a --trace or a --workload (one of them)")
    if replay_in_lab or replay_from:
        if trace is None:
            raise click.UsageError("a replay needs --trace")
        if len(policies) != 1 or (replay_in_lab and replay_from):
            raise click.UsageError("a replay takes one --policy, and --replay-in-lab or --replay-from, not both")
        from slurm_gpu.sim import replay

        try:
            if replay_in_lab:
                text = replay.replay_in_lab(policies[0], trace, out_dir, factor, fmt, lab_user,
                                            say=lambda m: click.echo(m, err=True), as_json=as_json)
            else:
                text = replay.replay_from(policies[0], trace, out_dir, factor, list(replay_from), fmt, as_json)
        except SlurmGpuError as exc:
            click.echo(f"slurm-gpu simulate: {str(exc).splitlines()[0]}", err=True)
            sys.exit(exc.exit_code)
        click.echo(text, nl=False)
        return
    from slurm_gpu.sim.params import Params
    from slurm_gpu.sim.settings import SettingError, parse_billing_weights, parse_shares, parse_sweep
    from slurm_gpu.units import UnitError, parse_time_seconds

    try:
        times = {name: parse_time_seconds(v) for name, v in
                 (("--bf-window", bf_window), ("--bf-interval", bf_interval), ("--ckpt-interval", ckpt_interval))}
    except UnitError as exc:
        raise click.UsageError(str(exc)) from None
    if times["--bf-interval"] < 1:
        raise click.UsageError("--bf-interval must be at least 1 second")
    try:
        params = Params(backfill=not no_backfill, bf_window_s=times["--bf-window"],
                        bf_interval_s=times["--bf-interval"], bf_max_job_test=bf_max_job_test,
                        preempt_type=preempt_type,  # type: ignore[arg-type]
                        ckpt_interval_s=times["--ckpt-interval"], weight_fairshare=fairshare_weight,
                        fairshare=fairshare,  # type: ignore[arg-type]
                        shares=parse_shares(shares), billing_weights=parse_billing_weights(billing_weights),
                        max_tres=max_tres, allocator=allocator)  # type: ignore[arg-type]
        swept = parse_sweep(sweep) if sweep else None
    except SettingError as exc:
        raise click.UsageError(str(exc)) from None
    if progress is None:
        progress = sys.stderr.isatty()
    try:
        if workload is not None:
            trace = _write_workload(policies[0], workload, n_jobs, seed, out_dir)
            fmt = "csv"
        assert trace is not None
        if swept is None:
            from slurm_gpu.sim.run_files import run

            click.echo(run(list(policies), trace, out_dir, params, fmt, progress), nl=False)
        else:
            click.echo(_sweep(list(policies), trace, out_dir, params, fmt, swept, progress), nl=False)
    except SlurmGpuError as exc:
        click.echo(f"slurm-gpu simulate: {str(exc).splitlines()[0]}", err=True)
        sys.exit(exc.exit_code)


def _write_workload(policy_path: str, name: str, jobs: int, seed: int, out_dir: str) -> str:
    """Generate the workload for the first policy's cluster into DIR/workload-NAME.csv; returns its path."""
    from pathlib import Path

    from slurm_gpu.errors import UsageError
    from slurm_gpu.policy.load import load_policy
    from slurm_gpu.sim.run_files import write_text
    from slurm_gpu.sim.workloads import generate

    if not Path(policy_path).is_file():
        raise UsageError(f"policy file {policy_path!r} does not exist")
    policy = load_policy(policy_path)
    node_gpus = max((nt.gpus for nt in policy.node_types), default=0)
    gpus = sum(nt.gpus * len(nt.nodes) for nt in policy.node_types)
    try:
        lines = generate(name, jobs, node_gpus, gpus, seed)
    except ValueError as exc:
        raise UsageError(f"--workload {name}: {exc}") from None
    return write_text(Path(out_dir) / f"workload-{name}.csv", "\n".join(lines) + "\n")


def _sweep(policies: list[str], trace: str, out_dir: str, params: object, fmt: str | None,
           swept: tuple[str, str, list[tuple[str, SweepValue]]], progress: bool = False) -> str:
    """One simulation per value into DIR/PARAM=VALUE/; DIR/sweep.csv (a row per value and policy); the table."""
    import json
    from pathlib import Path

    from slurm_gpu.sim.params import Params
    from slurm_gpu.sim.run_files import run, write_text
    from slurm_gpu.sim.settings import sweep_csv, sweep_row, sweep_table

    assert isinstance(params, Params)
    name, field, values = swept
    rows = []
    for text, value in values:
        where = Path(out_dir) / f"{name}={text}"
        changed = params._replace(**{field: value})  # type: ignore[arg-type]
        run(policies, trace, str(where), changed, fmt, progress)
        found = [where / "summary.json"] if len(policies) == 1 else sorted(where.glob("*/summary.json"))
        for f in found:
            rows.append(sweep_row(name, text, json.loads(f.read_text(encoding="utf-8"))))
    write_text(Path(out_dir) / "sweep.csv", sweep_csv(rows))
    return sweep_table(rows)
