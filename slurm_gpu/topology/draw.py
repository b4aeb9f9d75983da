# SPDX-License-Identifier: Apache-2.0
"""A terminal picture of a node (at most 80 columns): sockets, NUMA nodes with their cpu and core
ranges, GPUs under their NUMA node, NICs, the GPU link matrix and GPU groups by link quality."""

from __future__ import annotations

import functools
import textwrap
from typing import TYPE_CHECKING

from slurm_gpu.cpulist import format_cpulist
from slurm_gpu.topology.binding_table import binding_table
from slurm_gpu.topology.model import Nic, NumaNode, Topology

if TYPE_CHECKING:
    from slurm_gpu.jsontypes import JsonObject

WIDTH = 80
_ranges = functools.lru_cache(maxsize=256)(format_cpulist)  # GPUs repeat their NUMA node's lists


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _box(title: str, body: list[str]) -> list[str]:
    inner = WIDTH - 4
    out = ["+-" + _fit(f" {title} ", inner).ljust(inner + 1, "-") + "+"]
    out += [f"| {_fit(line, inner).ljust(inner)} |" for line in body]
    out.append("+" + "-" * (WIDTH - 2) + "+")
    return out


def _gpu_line(topo: Topology, index: int) -> str:
    g = topo.gpu(index)
    parts = [f"GPU{g.index}"]
    if g.name:
        parts.append(g.name)
    if g.memory_mib:
        parts.append(f"{round(g.memory_mib / 1024)} GiB")
    if g.mig_capable:
        parts.append("MIG")
    cores = topo.gpu_cores(g.index)
    parts.append(f"cores {_ranges(cores)}" if cores else "cores ?")
    nics = [n.name for n in topo.nics if topo.link(f"GPU{g.index}", f"NIC{n.index}") in ("PIX", "PXB")]
    if nics:
        parts.append("NIC " + ",".join(nics))
    return "  " + "  ".join(parts)


def _socket_of_node(topo: Topology, node: NumaNode) -> int | None:
    if node.socket is not None:
        return node.socket
    sockets = {topo.core_socket(c) for c in topo.numa_cores(node.id)}
    return sockets.pop() if len(sockets) == 1 else None


def render(topo: Topology) -> str:
    """The picture as one string (lines of at most 80 characters)."""
    mem = f", {topo.memory_mb} MB" if topo.memory_mb else ""
    lines = [
        _fit(
            f"Node: {topo.sockets} socket(s) x {topo.cores_per_socket} cores x {topo.threads_per_core} "
            f"thread(s) = {topo.total_cpus} CPUs{mem}, {len(topo.gpus)} GPU(s)",
            WIDTH,
        )
    ]
    placed: set[int] = set()
    nodes_of: dict[int | None, list[NumaNode]] = {}
    for n in topo.numa_nodes:
        nodes_of.setdefault(_socket_of_node(topo, n), []).append(n)
    gpus_of: dict[int | None, list[int]] = {}
    for g in topo.gpus:
        gpus_of.setdefault(g.numa_node, []).append(g.index)
    nics_of: dict[int | None, list[Nic]] = {}
    for nic in topo.nics:
        nics_of.setdefault(nic.numa_node, []).append(nic)
    for s in sorted({c.socket for c in topo.cpus}):
        cores = topo.socket_cores(s)
        cpus = topo.socket_cpus(s)
        body: list[str] = []
        for n in nodes_of.get(s, []):
            ncores = topo.numa_cores(n.id)
            body.append(f"NUMA {n.id}: cpus {format_cpulist(n.cpus)}  cores {format_cpulist(ncores)}")
            for index in gpus_of.get(n.id, []):
                body.append(_gpu_line(topo, index))
                placed.add(index)
            for nic in nics_of.get(n.id, []):
                body.append(f"  NIC{nic.index} {nic.name}")
        if not body:
            body.append("(no NUMA information)")
        title = f"Socket {s}: cores {format_cpulist(cores)}, cpus {format_cpulist(cpus)}"
        lines += _box(title, body)
    memory_only = [n for n in topo.numa_nodes if not n.cpus]
    for n in memory_only:
        if n.id in gpus_of:
            lines += _box(f"NUMA {n.id}: memory only (no CPUs)", [_gpu_line(topo, i) for i in gpus_of[n.id]])
            placed.update(gpus_of[n.id])
    bare = [n.id for n in memory_only if n.id not in gpus_of]
    if bare:  # Grace/GH200 GPU-memory nodes: one line, not a box each
        lines += textwrap.wrap(f"NUMA {format_cpulist(bare)}: memory only (no CPUs, no GPU placed)", WIDTH)
    loose = [f"NIC{n.index} {n.name}" for n in topo.nics if n.numa_node is None]
    if loose:
        lines += textwrap.wrap("NICs with unknown locality: " + ", ".join(loose), WIDTH)
    rest = [g.index for g in topo.gpus if g.index not in placed]
    if rest:
        lines += _box("GPUs with unknown NUMA node", [_gpu_line(topo, i) for i in rest])
    lines += _links(topo)
    from slurm_gpu.topology.slurmconf import numa_advice

    advice = numa_advice(topo)
    assumed = [topo.socket_assumption] if topo.socket_assumption else []
    for note in (*assumed, *topo.notes, *([advice] if advice else [])):
        lines += textwrap.wrap(f"note: {note}", WIDTH, subsequent_indent="      ", break_on_hyphens=False)
    return "\n".join(lines) + "\n"


def _links(topo: Topology) -> list[str]:
    if len(topo.gpus) < 2:
        return []
    out: list[str] = []
    labels = [f"GPU{g.index}" for g in topo.gpus]
    col = max(5, max(len(x) for x in labels) + 1)
    if 6 + col * len(labels) <= WIDTH:
        out.append("GPU links:")
        out.append(" " * 6 + "".join(x.rjust(col) for x in labels))
        for a in labels:
            cells = ["X" if a == b else (topo.link(a, b) or "?") for b in labels]
            out.append(a.ljust(6) + "".join(c.rjust(col) for c in cells))
    table = binding_table(topo)
    for grp in table.groups:
        if grp.level == "NUMA":
            continue
        desc = "NVLink" if grp.level == "NVLINK" else f"PCIe <= {grp.level}"
        out.append(_fit(f"{desc} group: GPU {format_cpulist(grp.gpus)}", WIDTH))
    if any(lk.switched for lk in topo.links):
        out.append("NVLinks go through NVSwitches (Slurm AutoDetect reports Links=0 for them)")
    return out


def summary_json(topo: Topology) -> JsonObject:
    """The ``topo show --json`` contract: sockets, NUMA nodes with cpu lists, GPUs with NUMA node,
    cpus (Linux range syntax or null), PCI bus id and links to every other GPU."""
    return {
        "sockets": topo.sockets,
        "numa_nodes": [{"id": n.id, "cpus": format_cpulist(n.cpus)} for n in topo.numa_nodes],
        "gpus": [
            {
                "index": g.index,
                "numa_node": g.numa_node,
                "cpus": format_cpulist(g.cpus) if g.cpus is not None else None,
                "pci_bus_id": g.pci_bus_id,
                "links": {
                    str(o.index): topo.link(f"GPU{g.index}", f"GPU{o.index}") or "?"
                    for o in topo.gpus
                    if o.index != g.index
                },
            }
            for g in topo.gpus
        ],
    }
