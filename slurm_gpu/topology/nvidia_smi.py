# SPDX-License-Identifier: Apache-2.0
"""Parse ``nvidia-smi topo -m`` text.

Accepted variants (all seen in real captures): TAB-separated (the real output; empty padding fields
between the tail columns), space-aligned terminal pastes, ``CPU Affinity`` / ``NUMA Affinity`` /
``GPU NUMA ID`` tail columns (any subset), NIC rows and a ``NIC Legend:`` block, NIC columns named
``NICn`` or by device (``mlx5_0``), the pre-2018 ``SOC`` spelling of ``SYS``, ANSI colour codes, and
Markdown re-typings of the table (``| CPU Affinity | NUMA Affinity | | GPU0 | ...``).

Values never contain spaces, so data rows split on any whitespace (which also drops the padding);
only the header has multi-word names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from slurm_gpu.cpulist import format_cpulist
from slurm_gpu.errors import TopologyError
from slurm_gpu.topology.lscpu import CpuLayout
from slurm_gpu.topology.model import (
    PCIE_RELATIONS,
    Gpu,
    Link,
    Nic,
    NumaNode,
    Thread,
    Topology,
    build_topology,
    checked_cpulist,
)

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_TAIL = {"CPU Affinity": "cpu", "NUMA Affinity": "numa", "GPU NUMA ID": "gpu_numa"}
_HEADER_TOKEN = re.compile(r"CPU\s+Affinity|NUMA\s+Affinity|GPU\s+NUMA\s+ID|\S+")
_GPU = re.compile(r"^GPU(\d+)$")
_REL = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$")


@dataclass(frozen=True)
class SmiGpu:
    """One GPU row: its affinity columns as printed (None = N/A or column absent)."""

    index: int
    line: int
    cpus: tuple[int, ...] | None
    numa_node: int | None
    gpu_numa_id: int | None


@dataclass(frozen=True)
class SmiTable:
    devices: tuple[str, ...]  # canonical labels in column order: GPU<i>, NIC<k>
    gpus: tuple[SmiGpu, ...]
    links: tuple[Link, ...]
    nic_names: dict[str, str] = field(default_factory=dict)  # NIC<k> -> mlx5_0
    notes: tuple[str, ...] = ()


def _norm_label(label: str, nic_labels: dict[str, str]) -> str:
    return label if _GPU.match(label) else nic_labels[label]


def _cpus(text: str, where: str) -> tuple[int, ...] | None:
    if text in ("N/A", "", "-"):
        return None
    return checked_cpulist(text, where, "CPU Affinity")


def _int_or_na(text: str, what: str, where: str) -> int | None:
    if text in ("N/A", "", "-"):
        return None
    if not re.fullmatch(r"\d{1,5}", text):
        raise TopologyError(f"{where}: bad {what} {text!r}; expected a NUMA node number or N/A")
    return int(text)


def _split_header(line: str) -> list[str]:
    return [re.sub(r"\s+", " ", t) for t in _HEADER_TOKEN.findall(line)]


def parse_topo_matrix(text: str, source: str = "nvidia-smi topo -m") -> SmiTable:
    """Parse the table. Raises TopologyError naming ``source:line`` and the problem."""
    lines = [_ANSI.sub("", ln).rstrip("\r\n") for ln in text.splitlines()]
    hdr_at = next(
        (i for i, ln in enumerate(lines) if not ln.lstrip().startswith("#") and re.search(r"\bGPU0\b", ln)), None
    )
    if hdr_at is None:
        raise TopologyError(f"{source}: no `nvidia-smi topo -m` header found; expected a line naming GPU0 ... GPUn")
    markdown = lines[hdr_at].strip().startswith("|")
    header, rows = (_markdown_rows if markdown else _text_rows)(lines, hdr_at, source)
    hline = hdr_at + 1
    devices = [h for h in header if h and h not in _TAIL]
    tail = [h for h in header if h in _TAIL]
    if len(set(devices)) != len(devices):
        raise TopologyError(f"{source}:{hline}: header names a device twice: {' '.join(devices)}")
    if not any(_GPU.match(d) for d in devices):
        raise TopologyError(f"{source}:{hline}: header has no GPU columns")
    nic_labels: dict[str, str] = {}
    for d in devices:
        if not _GPU.match(d):
            nic_labels[d] = d if re.fullmatch(r"NIC\d+", d) else f"NIC{len(nic_labels)}"
    cells: dict[str, dict[str, str]] = {}
    gpus: list[SmiGpu] = []
    for lineno, label, matrix, extra in rows:
        where = f"{source}:{lineno}"
        if label not in devices:
            raise TopologyError(f"{where}: row {label!r} is not a column of the header ({' '.join(devices)})")
        if label in cells:
            raise TopologyError(f"{where}: second row for {label}")
        is_gpu = bool(_GPU.match(label))
        n_values = len(matrix) + len([v for v in extra if v != ""])
        if not markdown and n_values not in (
            (len(devices) + len(tail),) if is_gpu else (len(devices), len(devices) + len(tail))
        ):
            raise TopologyError(
                f"{where}: row {label} has {n_values} values, the header has {len(devices)} device columns"
                + (f" and {len(tail)} affinity columns" if is_gpu and tail else "")
                + " (truncated or misaligned row)"
            )
        if len(matrix) != len(devices):
            raise TopologyError(
                f"{where}: row {label} has {len(matrix)} matrix cells, the header names {len(devices)} devices "
                "(truncated or misaligned row)"
            )
        cells[label] = dict(zip(devices, matrix))
        for d, v in cells[label].items():
            if not _REL.match(v):
                raise TopologyError(
                    f"{where}: row {label}, column {d}: unknown relation {v!r}; "
                    "expected X, NV<n>, PIX, PXB, PHB, NODE or SYS"
                )
            if (v == "X") != (d == label):
                raise TopologyError(f"{where}: row {label}, column {d}: 'X' must appear exactly on the diagonal")
        m = _GPU.match(label)
        if m:
            present = [v for v in extra if v != ""] if not markdown else extra
            if len(present) != len(tail):
                raise TopologyError(
                    f"{where}: row {label} has {len(present)} values after the matrix, the header has "
                    f"{len(tail)} ({', '.join(tail) or 'none'})"
                )
            vals = dict(zip((_TAIL[t] for t in tail), present))
            gpus.append(
                SmiGpu(
                    index=int(m.group(1)),
                    line=lineno,
                    cpus=_cpus(vals.get("cpu", "N/A"), where),
                    numa_node=_int_or_na(vals.get("numa", "N/A"), "NUMA Affinity", where),
                    gpu_numa_id=_int_or_na(vals.get("gpu_numa", "N/A"), "GPU NUMA ID", where),
                )
            )
        elif any(v not in ("", "N/A") for v in extra) and len(extra) > len(tail):
            raise TopologyError(
                f"{where}: row {label} has {len(extra)} values after the matrix, header has {len(tail)}"
            )
    missing = [d for d in devices if d not in cells]
    if any(_GPU.match(d) for d in missing) or len(missing) == len(devices):
        raise TopologyError(
            f"{source}:{hline}: table truncated: the header names {len(devices)} devices but rows for "
            f"{', '.join(missing)} are missing"
        )
    notes: list[str] = []
    if missing:  # a NIC row only repeats its column (seen in hand-typed copies): rebuild it
        have_rows = set(cells)
        for d in missing:  # two missing NIC rows: their mutual relation is unknown, assume SYS
            cells[d] = {o: "X" if o == d else cells[o][d] if o in have_rows else "SYS" for o in devices}
        notes.append(f"{source}: rows for {', '.join(missing)} missing; taken from their columns")
    links: list[Link] = []
    row_line = {label: ln for ln, label, _m, _e in rows}
    row_line.update({d: hline for d in missing})
    for i, a in enumerate(devices):
        for b in devices[i + 1 :]:
            ab, ba = cells[a][b], cells[b][a]
            if ab != ba:
                raise TopologyError(
                    f"{source}:{row_line[b]}: asymmetric matrix: {b}->{a} is {ba} but {a}->{b} is {ab} "
                    f"(line {row_line[a]})"
                )
            kind = "SYS" if ab == "SOC" else ab
            links.append(Link(_norm_label(a, nic_labels), _norm_label(b, nic_labels), kind))
    names = {v: k for k, v in nic_labels.items() if k != v}
    names.update(_nic_legend(lines))
    canon = tuple(_norm_label(d, nic_labels) for d in devices)
    return SmiTable(canon, tuple(sorted(gpus, key=lambda g: g.index)), tuple(links), names, tuple(notes))


Row = tuple[int, str, list[str], list[str]]  # line number, label, matrix cells, affinity cells


def _text_rows(lines: list[str], hdr_at: int, source: str) -> tuple[list[str], list[Row]]:
    header = _split_header(lines[hdr_at].strip())
    rows: list[Row] = []
    for i in range(hdr_at + 1, len(lines)):
        tokens = lines[i].split()
        if not tokens or tokens[0].rstrip(":") == "Legend":
            break
        rows.append((i + 1, tokens[0], tokens[1 : 1 + _ndev(header)], tokens[1 + _ndev(header) :]))
    return header, rows


def _ndev(header: list[str]) -> int:
    return len([h for h in header if h not in _TAIL])


def _markdown_rows(lines: list[str], hdr_at: int, source: str) -> tuple[list[str], list[Row]]:
    def cells(line: str) -> list[str]:
        return [c.strip() for c in line.strip().strip("|").split("|")]

    header = [re.sub(r"\s+", " ", c) for c in cells(lines[hdr_at])]
    if header.count("") != 1:
        raise TopologyError(
            f"{source}:{hdr_at + 1}: Markdown table needs exactly one empty header cell (the row labels)"
        )
    label_col = header.index("")
    dev_cols = [i for i, h in enumerate(header) if h and h not in _TAIL]
    tail_cols = [i for i, h in enumerate(header) if h in _TAIL]
    rows: list[Row] = []
    for i in range(hdr_at + 1, len(lines)):
        line = lines[i].strip()
        if not line.startswith("|"):
            break
        if re.fullmatch(r"[|\-:\s]+", line):
            continue
        c = cells(line)
        if len(c) != len(header):
            raise TopologyError(f"{source}:{i + 1}: row has {len(c)} cells, the header has {len(header)}")
        rows.append((i + 1, c[label_col], [c[j] for j in dev_cols], [c[j] for j in tail_cols]))
    return [header[j] for j in dev_cols] + [header[j] for j in tail_cols], rows


def _nic_legend(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    in_legend = False
    for ln in lines:
        if ln.strip() == "NIC Legend:":
            in_legend = True
            continue
        m = re.match(r"^\s*(NIC\d+):\s*(\S+)\s*$", ln)
        if in_legend and m:
            out[m.group(1)] = m.group(2)
    return out


def infer_cpu_layout(table: SmiTable) -> CpuLayout:
    """Guess cores and sockets from the affinity columns alone (no lscpu given).

    Assumptions, recorded as notes: the node has cpus 0..max; SMT pairs are ``i`` and ``i + N/2``
    when every GPU's cpu list is two ranges mirrored that way (the Linux x86 enumeration); one
    socket per CPU-bearing NUMA node seen, cores split evenly in OS order.
    """
    groups = [set(g.cpus) for g in table.gpus if g.cpus]
    if not groups:
        raise TopologyError("no CPU Affinity in the capture; pass the node's `lscpu -p` output too")
    n = max(max(g) for g in groups) + 1
    half = n // 2
    smt = n % 2 == 0 and all(
        len(format_cpulist(g).split(",")) >= 2
        and {c + half for c in g if c < half} == {c for c in g if c >= half}
        and any(c < half for c in g)
        for g in groups
    )
    n_cores = half if smt else n
    numa_of: dict[int, int] = {}
    for g in table.gpus:
        if g.cpus and g.numa_node is not None:
            for c in g.cpus:
                numa_of[c] = g.numa_node
    numa_ids = sorted({g.numa_node for g in table.gpus if g.numa_node is not None and g.cpus})
    sockets = len(numa_ids) if numa_ids and n_cores % len(numa_ids) == 0 else 1
    per_socket = n_cores // sockets
    threads = tuple(
        Thread(os_id=c, socket=(c % n_cores) // per_socket, core_key=c % n_cores, numa_node=numa_of.get(c))
        for c in range(n)
    )
    nodes = tuple(NumaNode(id=k, cpus=tuple(sorted(c for c, v in numa_of.items() if v == k))) for k in numa_ids)
    notes = [
        f"no lscpu given: assumed cpus 0-{n - 1}, {'2 threads' if smt else '1 thread'} per core, "
        f"{sockets} socket(s) of {per_socket} cores; pass --lscpu for exact sockets and cores"
    ]
    return CpuLayout(threads, nodes, tuple(notes))


def topology_from_nvidia_smi(
    text: str,
    layout: CpuLayout | None = None,
    *,
    gpu_defaults: Mapping[str, Any] | None = None,
    memory_mb: int | None = None,
    source: str = "nvidia-smi topo -m",
) -> Topology:
    """Combine a ``topo -m`` capture with a CPU layout (from ``parse_lscpu``; inferred if None).

    ``gpu_defaults`` may give ``name``, ``memory_mib``, ``mig_capable`` for every GPU (``topo -m``
    does not print them).
    """
    table = parse_topo_matrix(text, source)
    notes: list[str] = list(table.notes)
    if layout is None:
        layout = infer_cpu_layout(table)
    notes.extend(layout.notes)
    numa = {n.id: n for n in layout.numa_nodes}
    known_cpus = {t.os_id for t in layout.threads}
    for g in table.gpus:
        where = f"{source}:{g.line}"
        if g.cpus is not None and not set(g.cpus) <= known_cpus:
            raise TopologyError(
                f"{where}: GPU{g.index} CPU Affinity {format_cpulist(g.cpus)} is outside the node's cpus "
                f"{format_cpulist(known_cpus)}"
            )
        if g.numa_node is not None and numa and g.numa_node not in numa:
            raise TopologyError(
                f"{where}: GPU{g.index} NUMA Affinity {g.numa_node} is not a NUMA node of this node "
                f"(known: {', '.join(map(str, sorted(numa)))})"
            )
        if g.numa_node is not None and g.numa_node not in numa:
            numa[g.numa_node] = NumaNode(id=g.numa_node, cpus=g.cpus or ())
        if g.gpu_numa_id is not None and g.gpu_numa_id not in numa:
            numa[g.gpu_numa_id] = NumaNode(id=g.gpu_numa_id, cpus=())  # GPU memory as a NUMA node
    defaults = dict(gpu_defaults or {})
    gpus = [
        Gpu(
            index=g.index,
            name=defaults.get("name"),
            memory_mib=defaults.get("memory_mib"),
            mig_capable=bool(defaults.get("mig_capable", False)),
            numa_node=g.numa_node,
            cpus=g.cpus,
        )
        for g in table.gpus
    ]
    gpu_numa = {f"GPU{g.index}": g.numa_node for g in table.gpus}
    nics = []
    for k, label in enumerate(d for d in table.devices if not _GPU.match(d)):
        near = {
            gpu_numa[other]
            for lk in table.links
            if label in (lk.a, lk.b) and lk.kind in PCIE_RELATIONS[:-1]
            for other in (lk.a, lk.b)
            if other in gpu_numa
        }
        near.discard(None)
        nics.append(
            Nic(index=k, name=table.nic_names.get(label, label), numa_node=near.pop() if len(near) == 1 else None)
        )
    return build_topology(layout.threads, numa.values(), gpus, nics, table.links, memory_mb=memory_mb, notes=notes)
