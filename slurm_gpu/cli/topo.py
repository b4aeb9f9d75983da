# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu topo``: read a node's topology and print it, or the Slurm config generated from it.

Input (exactly one): ``--from-nvidia-smi FILE [--lscpu FILE]``, ``--from-hwloc FILE``, ``--live``
or ``--from-file DESCRIPTOR`` (.yaml descriptor, .xml hwloc, .json from ``show --json --full``).

Exit codes: 0 ok; 2 bad input (a file that cannot be read or parsed, one ``Error: ...`` line on
stderr) or bad usage. When sockets were guessed (no lscpu), one ``note: ...`` line goes to stderr.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from slurm_gpu.errors import SlurmGpuError

if TYPE_CHECKING:
    from slurm_gpu.topology.model import Topology


class BadInput(click.ClickException):
    """A topology input that cannot be used: one ``Error: ...`` line, exit code 2."""

    exit_code = 2


def _input_options(fn: Callable[..., None]) -> Callable[..., None]:
    @click.option("--from-nvidia-smi", "smi", type=str, help="`nvidia-smi topo -m` capture.")
    @click.option(
        "--lscpu", type=str, help="`lscpu -p` or `lscpu` output (with --from-nvidia-smi)."
    )
    @click.option("--from-hwloc", "hwloc", type=str, help="hwloc v2 XML (`lstopo --of xml`).")
    @click.option("--live", is_flag=True, help="This node: sysfs plus NVML when a driver is present.")
    @click.option(
        "--from-file",
        "descriptor",
        type=str,
        help="Descriptor .yaml, hwloc .xml or topology .json.",
    )
    @functools.wraps(fn)
    def wrapper(
        *args: Any,
        smi: str | None,
        lscpu: str | None,
        hwloc: str | None,
        live: bool,
        descriptor: str | None,
        **kwargs: Any,
    ) -> None:
        chosen = [x for x in (smi, hwloc, descriptor) if x] + (["live"] if live else [])
        if len(chosen) != 1:
            raise click.UsageError(
                "give exactly one input: --from-nvidia-smi FILE [--lscpu FILE], --from-hwloc FILE, --live "
                "or --from-file DESCRIPTOR"
            )
        if lscpu and not smi:
            raise click.UsageError("--lscpu only goes with --from-nvidia-smi")
        try:
            topo = _load(smi, lscpu, hwloc, live, descriptor)
        except SlurmGpuError as e:
            raise BadInput(_one_line(str(e))) from None
        if topo.socket_assumption:
            click.echo(f"note: {topo.socket_assumption}", err=True)
        try:
            fn(*args, topo=topo, **kwargs)
        except SlurmGpuError as e:
            raise BadInput(_one_line(str(e))) from None

    return wrapper


def _one_line(message: str) -> str:
    return " ".join(message.split())


def _read(path: str, what: str) -> str:
    from slurm_gpu.topology.loader import read_text

    return read_text(path, what)


def _load(smi: str | None, lscpu: str | None, hwloc: str | None, live: bool, descriptor: str | None) -> Topology:
    if live:
        from slurm_gpu.adapters.nvml import live_topology

        return live_topology(on_warning=lambda msg: click.echo(f"warning: {msg}", err=True))
    if descriptor:
        from slurm_gpu.topology import load_topology_file

        return load_topology_file(descriptor)
    if hwloc:
        from slurm_gpu.topology.hwloc import topology_from_hwloc

        return topology_from_hwloc(_read(hwloc, "hwloc XML"), source=hwloc)
    from slurm_gpu.topology.lscpu import parse_lscpu
    from slurm_gpu.topology.nvidia_smi import topology_from_nvidia_smi

    assert smi is not None  # _input_options checked that exactly one input was given
    layout = parse_lscpu(_read(lscpu, "lscpu output"), source=lscpu) if lscpu else None
    return topology_from_nvidia_smi(_read(smi, "nvidia-smi topo -m capture"), layout, source=smi)


@click.group()
def topo() -> None:
    """Parse node topology; generate gres.conf and slurm.conf lines."""


@topo.command()
@_input_options
@click.option("--json", "as_json", is_flag=True, help="Print the JSON summary instead of the picture.")
@click.option("--full", is_flag=True, help="With --json: the whole model (loadable with --from-file x.json).")
def show(topo: Topology, as_json: bool, full: bool) -> None:
    """Draw the node: sockets, NUMA nodes, cores, GPUs under their NUMA node, links."""
    from slurm_gpu.topology.draw import render, summary_json

    if as_json:
        click.echo(json.dumps(topo.to_json() if full else summary_json(topo), indent=2))
    else:
        click.echo(render(topo), nl=False)


@topo.command("gres-conf")
@_input_options
@click.option("--node-name", default="localhost", show_default=True, help="NodeName (a hostlist).")
@click.option("--type", "gpu_type", help="GPU Type= (e.g. h100); omitted if not given.")
@click.option("--links", is_flag=True, help="Add Links= (one GPU per line then).")
@click.option("--device-dir", default="/dev", show_default=True, help="Where the nvidiaN device files are.")
def gres_conf(topo: Topology, node_name: str, gpu_type: str | None, links: bool, device_dir: str) -> None:
    """gres.conf lines with Cores= in Slurm abstract core ids."""
    from slurm_gpu.topology.slurmconf import gres_conf_lines, numa_advice

    for line in gres_conf_lines(topo, node_name, gpu_type, device_dir, links=links):
        click.echo(line)
    advice = numa_advice(topo)
    if advice:
        click.echo(f"# note: {advice}")


@topo.command("node-conf")
@_input_options
@click.option("--node-name", default="localhost", show_default=True, help="NodeName (a hostlist).")
@click.option("--type", "gpu_type", help="GPU type for Gres=gpu:TYPE:N.")
@click.option("--set", "extra", multiple=True, metavar="KEY=VALUE", help="Extra slurm.conf node keys, repeatable.")
def node_conf(topo: Topology, node_name: str, gpu_type: str | None, extra: tuple[str, ...]) -> None:
    """The slurm.conf NodeName line."""
    from slurm_gpu.topology.slurmconf import node_conf_line

    pairs: dict[str, str] = {}
    for item in extra:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.UsageError(f"--set {item!r}: expected KEY=VALUE, e.g. Features=nvlink")
        pairs[key] = value
    click.echo(node_conf_line(topo, node_name, gpu_type, **pairs))


@topo.command("fake-gpus-conf")
@_input_options
@click.option("--type", "gpu_type", required=True, help="GPU type name (e.g. h100).")
@click.option("--device-dir", default="/dev", show_default=True)
def fake_gpus_conf_cmd(topo: Topology, gpu_type: str, device_dir: str) -> None:
    """Slurm's fake_gpus.conf (GPU autodetection without GPUs), one line per GPU."""
    from slurm_gpu.topology.slurmconf import fake_gpus_conf

    click.echo(fake_gpus_conf(topo, gpu_type, device_dir), nl=False)


@topo.command("binding-table")
@_input_options
def binding_table_cmd(topo: Topology) -> None:
    """JSON binding table: GPU -> local cores, socket, NUMA node; GPU groups by link quality."""
    from slurm_gpu.topology.binding_table import binding_table

    click.echo(json.dumps(binding_table(topo).to_json(), indent=2))
