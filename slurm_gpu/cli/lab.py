# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu lab up|down|status|env|demo``: a real local Slurm with emulated GPU nodes (thin CLI)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from slurm_gpu.errors import SlurmGpuError

if TYPE_CHECKING:
    from slurm_gpu.lab.control import Lab

_lab_dir = click.option(
    "--lab-dir",
    envvar="SLURM_GPU_LAB_DIR",
    default="/tmp/slurm-gpu-lab",
    show_default=True,
    help="Where the lab keeps config, state, logs and pidfiles (env SLURM_GPU_LAB_DIR).",
)


def _lab(lab_dir: str) -> Lab:
    from slurm_gpu.lab.config import LabPaths
    from slurm_gpu.lab.control import Lab

    return Lab(LabPaths(lab_dir), say=lambda m: click.echo(f"[lab] {m}", err=True))


def _fail(e: Exception) -> None:
    raise click.ClickException(str(e).splitlines()[0] if str(e) else type(e).__name__)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def lab() -> None:
    """A real Slurm (Debian packages) on this machine, with emulated GPU nodes from the lab policy."""


@lab.command()
@_lab_dir
@click.option(
    "--policy",
    "policy_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Site policy that defines nodes, partitions and QOS [examples/policies/university.yaml].",
)
@click.option("--restart", is_flag=True, help="Stop and start afresh even if a healthy lab is up.")
@click.option(
    "--job-submit-lua",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Copy this job_submit.lua beside slurm.conf instead of the one compiled from the policy.",
)
@click.option("--job-submit/--no-job-submit", default=None,
              help="Run the policy compiled into job_submit.lua (JobSubmitPlugins=lua), or no plugin "
                   "[on, unless SLURM_GPU_LAB_JOB_SUBMIT=0].")
@click.option("--prolog", type=click.Path(exists=True, dir_okay=False), default=None, help="Prolog= script.")
@click.option("--epilog", type=click.Path(exists=True, dir_okay=False), default=None, help="Epilog= script.")
@click.option("--task-prolog", type=click.Path(exists=True, dir_okay=False), default=None, help="TaskProlog= script.")
@click.option("--epilog-slurmctld", type=click.Path(exists=True, dir_okay=False), default=None,
              help="EpilogSlurmctld= program (e.g. prolog_epilog/epilog_ctld.sh); off unless given.")
@click.option("--packages", "package_sets", default="demo", show_default=True, metavar="SET[,SET...]",
              help="Debian package sets to install when missing: demo (the lab itself), test (a C compiler "
                   "for the tests' NVML stand-in), browser (headless chromium for the report's test).")
def up(
    lab_dir: str,
    policy_path: str | None,
    restart: bool,
    job_submit_lua: str | None,
    job_submit: bool | None,
    prolog: str | None,
    epilog: str | None,
    task_prolog: str | None,
    epilog_slurmctld: str | None,
    package_sets: str,
) -> None:
    """Install what is missing, write config, start all daemons, wait until every node is idle."""
    import os

    from slurm_gpu.lab.control import default_hooks, default_policy_path, policy_spec_factory

    policy = os.path.abspath(policy_path or default_policy_path())
    hooks = default_hooks(job_submit_lua, prolog, epilog, task_prolog, job_submit_policy=job_submit)
    if epilog_slurmctld:
        from dataclasses import replace

        hooks = replace(hooks, epilog_slurmctld=os.path.abspath(epilog_slurmctld))
    try:
        took = _lab(lab_dir).up(policy_spec_factory(policy), hooks=hooks, restart=restart, policy_path=policy,
                                packages=tuple(s.strip() for s in package_sets.split(",") if s.strip()))
    except SlurmGpuError as e:
        _fail(e)
    click.echo(f"ready in {took:.1f} s")


@lab.command()
@_lab_dir
def down(lab_dir: str) -> None:
    """Cancel jobs, stop exactly the daemons the lab started, remove its devices and directory."""
    try:
        _lab(lab_dir).down()
    except SlurmGpuError as e:
        _fail(e)


@lab.command()
@_lab_dir
def status(lab_dir: str) -> None:
    """Show the lab's daemons and nodes; exit 1 unless the lab is up and healthy."""
    lb = _lab(lab_dir)
    for line in lb.status_lines():
        click.echo(line)
    ok = lb.healthy()
    click.echo("healthy" if ok else "NOT healthy")
    sys.exit(0 if ok else 1)


@lab.command()
@_lab_dir
def env(lab_dir: str) -> None:
    """Print the exports a client needs: source <(slurm-gpu lab env)."""
    click.echo(_lab(lab_dir).env_text(), nl=False)


@lab.command()
@_lab_dir
@click.option("--script", default=None, help="Job script to submit [examples/jobs/hello-gpu.sh].")
@click.option("--timeout", "timeout_s", default=120, show_default=True, help="Seconds to wait for the job.")
def demo(lab_dir: str, script: str | None, timeout_s: int) -> None:
    """Submit examples/jobs/hello-gpu.sh with gpusub as the lab user and show where it ran."""
    from slurm_gpu.lab.demo import run_demo

    try:
        ok = run_demo(_lab(lab_dir), script=script, timeout_s=timeout_s, echo=click.echo)
    except (SlurmGpuError, TimeoutError) as e:
        _fail(e)
    sys.exit(0 if ok else 1)
