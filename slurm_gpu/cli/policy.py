# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu policy check|show|compile FILE``. Exit codes: 0 valid (warnings allowed) / printed /
written, 1 invalid policy or a file that cannot be written, 2 usage."""

from __future__ import annotations

import json
import os
from dataclasses import asdict

import click


@click.group("policy")
def policy() -> None:
    """Check and inspect site policy files."""


@policy.command("check")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print {valid, errors, warnings} as JSON.")
@click.option("--live/--no-live", default=True, envvar="SLURM_GPU_POLICY_LIVE",
              help="Compare with the live cluster when Slurm answers (SLURM_CONF set).")
def check(file: str, as_json: bool, live: bool) -> None:
    """Validate FILE: errors name file:line:column, the field, what was found and what is allowed."""
    from slurm_gpu.policy.load import check_policy

    if not os.path.exists(file):
        raise click.UsageError(f"policy file {file!r} does not exist")
    result = check_policy(file)
    warnings = list(result.warnings)
    if result.policy is not None:
        for nt in result.policy.node_types:
            if not os.path.exists(nt.topology):
                warnings.append(f"node_types.{nt.name}.topology: file {nt.topology} not found")
        if live:
            warnings += _release_warnings(result.policy)
            from slurm_gpu.adapters.slurm.inventory import live_inventory
            from slurm_gpu.policy.lint import live_warnings

            inv = live_inventory()
            if inv is not None:
                warnings += live_warnings(result.policy, inv.partitions, inv.qos, inv.gpu_types)
                from slurm_gpu.adapters.slurm.inventory import live_node_records
                from slurm_gpu.policy.lint import unserved_slices
                from slurm_gpu.policy.nodes import records_inventory

                records = live_node_records()
                if records:
                    warnings += unserved_slices(result.policy, records_inventory(records))
    if as_json:
        click.echo(json.dumps({"valid": result.ok, "file": file, "errors": list(result.errors),
                               "warnings": warnings}, indent=2))
    else:
        for e in result.errors:
            click.echo(f"error: {e}", err=True)
        for w in warnings:
            click.echo(f"warning: {w}", err=True)
        def n(count: int, word: str) -> str:
            return f"{count} {word}{'' if count == 1 else 's'}"

        click.echo(f"{file}: " + ("valid" if result.ok else f"invalid ({n(len(result.errors), 'error')})")
                   + (f", {n(len(warnings), 'warning')}" if warnings else ""))
    if not result.ok:
        raise SystemExit(1)


def _release_warnings(policy_obj: object) -> list[str]:
    """Warnings for the installed Slurm release (``sbatch --version``; none when sbatch cannot be asked):
    static MIG profiles its gpu/nvml names otherwise (policy.lint.mig_spelling_warnings)."""
    import shutil

    from slurm_gpu.errors import SlurmGpuError
    from slurm_gpu.policy.lint import mig_spelling_warnings
    from slurm_gpu.policy.model import Policy

    if not isinstance(policy_obj, Policy) or not any(nt.mig_mode == "static" for nt in policy_obj.node_types):
        return []
    if shutil.which("sbatch") is None:
        return []
    from slurm_gpu.adapters.slurm.cli import SbatchCli

    try:
        spelling = SbatchCli().spelling()
    except (SlurmGpuError, OSError):
        return []
    return mig_spelling_warnings(policy_obj, spelling.mig_profile_from_attributes, spelling.label)


@policy.command("compile")
@click.argument("file", metavar="POLICY", type=click.Path(dir_okay=False))
@click.option("-o", "--output", default=None, metavar="PATH",
              help="Write job_submit.lua here (a directory gets job_submit.lua in it) [standard output].")
@click.option("--install", is_flag=True,
              help="Write job_submit.lua into the directory of slurm.conf (SLURM_CONF, else /etc/slurm).")
def compile_(file: str, output: str | None, install: bool) -> None:
    """Compile POLICY to one self-contained job_submit.lua (Lua 5.1) for Slurm's job_submit/lua plugin:
    the same classes, limits, defaults and messages as gpusub, for plain sbatch, salloc, srun and
    scontrol update. Files are replaced atomically; slurmctld re-reads the script by itself."""
    from slurm_gpu.emit.install_lua import SCRIPT_NAME, compile_file, install_text, slurm_conf_dir
    from slurm_gpu.errors import SlurmGpuError

    if output and install:
        raise click.UsageError("give -o PATH or --install, not both")
    if not os.path.exists(file):
        raise click.UsageError(f"policy file {file!r} does not exist")
    try:
        text = compile_file(file)
    except (SlurmGpuError, OSError, ValueError) as exc:  # an invalid policy, a template that is missing
        raise click.ClickException(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    if not output and not install or output == "-":
        click.echo(text, nl=False)
        return
    dst = os.path.join(slurm_conf_dir(), SCRIPT_NAME) if install else str(output)
    if os.path.isdir(dst):
        dst = os.path.join(dst, SCRIPT_NAME)
    try:
        written = install_text(text, dst)
    except OSError as exc:
        raise click.ClickException(f"cannot write {dst}: {exc.strerror or exc}") from None
    click.echo(f"{dst}: {'written' if written else 'unchanged'} (policy {file})", err=True)


@policy.command("show")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the parsed model as JSON.")
def show(file: str, as_json: bool) -> None:
    """Print the parsed policy (after includes and defaults)."""
    from slurm_gpu.errors import PolicyError
    from slurm_gpu.policy.load import load_policy

    if not os.path.exists(file):
        raise click.UsageError(f"policy file {file!r} does not exist")
    try:
        pol = load_policy(file)
    except PolicyError as exc:
        raise click.ClickException(f"error loading policy {exc}") from None
    if as_json:
        click.echo(json.dumps(asdict(pol), indent=2))
        return
    click.echo(f"policy {pol.name} (version {pol.version}) from {pol.source}")
    for nt in pol.node_types:
        click.echo(f"  node type {nt.name}: {nt.hostlist} {nt.gpus} x {nt.gpu_type or 'no GPU'}")
    for p in pol.partitions:
        click.echo(f"  partition {p.name}: nodes {','.join(p.node_types)} max_time {p.max_time_min} min "
                   f"tier {p.priority_tier}{' preemptible' if p.preemptible else ''}{' default' if p.default else ''}")
    for q in pol.qos:
        click.echo(f"  qos {q.name}: priority {q.priority} max_gpus_per_job {q.max_gpus_per_job} "
                   f"max_gpus_per_user {q.max_gpus_per_user} max_wall {q.max_wall_min} min")
    for c in pol.classes:
        click.echo(f"  class {c.name} -> {c.partition}/{c.qos or '(partition default)'}: {c.description}")
