# SPDX-License-Identifier: Apache-2.0
"""Parse ``nvidia-smi topo -m`` text.

Accepted variants (all seen in real captures): TAB-separated (the real output; empty padding fields
between the tail columns), space-aligned terminal pastes, ``CPU Affinity`` / ``NUMA Affinity`` /
``GPU NUMA ID`` tail columns (any subset), NIC rows and a ``NIC Legend:`` block, NIC columns named
``NICn`` or by device (``mlx5_0``, ``mlx5_bond_0``), the pre-2018 ``SOC`` spelling of ``SYS``, ANSI
colour codes (also without the escape byte, as web pages keep them: ``[4mGPU0[0m``), ``N/A`` cells,
shell prompt lines and text before the table, indentation, trailing legend text, Grace-style
``NUMA Affinity`` lists (``0,3-9,11-17``) and Markdown re-typings of the table.

Values never contain spaces, so data rows split on any whitespace (which also drops the padding);
only the header has multi-word names. Parsing is linear in the text: at most MAX_GPUS device
columns, and the distinct CPU Affinity cells may name at most 4 x MAX_CPUS cpus in total.
"""

from __future__ import annotations

import re
from dataclasses import replace

from slurm_gpu.errors import TopologyError
from slurm_gpu.topology.infer import check_against_lscpu, infer_cpu_layout, primary_numa
from slurm_gpu.topology.lscpu import CpuLayout
from slurm_gpu.topology.model import (
    MAX_CPUS,
    MAX_GPUS,
    PCIE_RELATIONS,
    RELATION,
    Gpu,
    GpuDefaults,
    Link,
    Nic,
    NumaNode,
    Topology,
    build_topology,
    checked_cpulist,
    clip,
)
from slurm_gpu.topology.smi_table import SmiGpu, SmiTable

_ANSI = re.compile(r"\x1b?\[[0-9;]{0,8}m")  # web pastes keep "[4m" but lose the ESC byte
_TAIL = {"CPU Affinity": "cpu", "NUMA Affinity": "numa", "GPU NUMA ID": "gpu_numa"}
_HEADER_TOKEN = re.compile(r"CPU\s+Affinity|NUMA\s+Affinity|GPU\s+NUMA\s+ID|\S+")
_GPU = re.compile(r"^GPU([0-9]+)$")
_AFFINITY_BUDGET = 4 * MAX_CPUS


def _na(text: str) -> bool:
    return text in ("N/A", "", "-")


def _ids(text: str, what: str, where: str) -> tuple[int, ...] | None:
    """A NUMA id or id list (``0`` or ``0,3-9,11-17``); None for N/A."""
    if _na(text):
        return None
    if not re.fullmatch(r"[0-9,\-]{1,200}", text):
        raise TopologyError(f"{where}: bad {what} {clip(text)}; expected a NUMA node number, a list or N/A")
    return checked_cpulist(text, where, what)


def _gpu_index(label: str, where: str) -> int:
    digits = label[3:]
    if len(digits) > 4 or int(digits) >= MAX_GPUS:
        raise TopologyError(f"{where}: device {clip(label)}: GPU index beyond {MAX_GPUS - 1}")
    return int(digits)


def _split_header(line: str) -> list[str]:
    return [re.sub(r"\s+", " ", t) for t in _HEADER_TOKEN.findall(line)]


def _find_header(lines: list[str], source: str) -> int:
    """The first line naming GPU0 whose next non-blank line is a row of it (a device, then a
    relation), so a prompt or a sentence that mentions GPU0 is skipped; else the first such line."""
    first = None
    for i, ln in enumerate(lines):
        if ln.lstrip().startswith("#") or not re.search(r"\bGPU0\b", ln):
            continue
        first = i if first is None else first
        labels = set(re.split(r"[\s|]+", ln.strip()))
        nxt = next((x for x in lines[i + 1 : i + 4] if x.strip() and not re.fullmatch(r"[|\-:\s]+", x)), "")
        words = [w for w in re.split(r"[\s|]+", nxt) if w]
        if len(words) > 1 and words[0] in labels and RELATION.match(words[1]):  # a row: GPU0 X NV18 ...
            return i
    if first is None:
        raise TopologyError(f"{source}: no `nvidia-smi topo -m` header found; expected a line naming GPU0 ... GPUn")
    return first


def parse_topo_matrix(text: str, source: str = "nvidia-smi topo -m") -> SmiTable:
    """Parse the table. Raises TopologyError naming ``source:line`` and the problem."""
    lines = [_ANSI.sub("", ln).rstrip("\r\n") for ln in text.splitlines()]
    hdr_at = _find_header(lines, source)
    markdown = lines[hdr_at].strip().startswith("|")
    header, rows = (_markdown_rows if markdown else _text_rows)(lines, hdr_at, source)
    hline = hdr_at + 1
    devices = [h for h in header if h and h not in _TAIL]
    tail = [h for h in header if h in _TAIL]
    if len(devices) > MAX_GPUS:
        raise TopologyError(f"{source}:{hline}: header names {len(devices)} devices; at most {MAX_GPUS} are supported")
    if len(set(devices)) != len(devices):
        raise TopologyError(f"{source}:{hline}: header names a device twice: {clip(' '.join(devices), 200)}")
    if not any(_GPU.match(d) for d in devices):
        raise TopologyError(f"{source}:{hline}: header has no GPU columns")
    device_set = set(devices)
    nic_labels: dict[str, str] = {}
    for d in devices:
        if _GPU.match(d):
            _gpu_index(d, f"{source}:{hline}")
        else:
            nic_labels[d] = d if re.fullmatch(r"NIC[0-9]{1,4}", d) else f"NIC{len(nic_labels)}"
    cells: dict[str, dict[str, str]] = {}
    gpus: list[SmiGpu] = []
    parsed: dict[str, tuple[int, ...]] = {}  # identical affinity cells share one tuple
    budget = _AFFINITY_BUDGET
    for lineno, label, matrix, extra in rows:
        where = f"{source}:{lineno}"
        if label not in device_set:
            raise TopologyError(f"{where}: row {clip(label)} is not a column of the header")
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
        cells[label] = dict(zip(devices, matrix, strict=True))
        for d, v in cells[label].items():
            if not RELATION.match(v):
                raise TopologyError(
                    f"{where}: row {label}, column {d}: unknown relation {clip(v)}; "
                    "expected X, NV<n>, PIX, PXB, PHB, NODE or SYS"
                )
            if (v == "X") != (d == label):
                raise TopologyError(f"{where}: row {label}, column {d}: 'X' must appear exactly on the diagonal")
        if is_gpu:
            present = [v for v in extra if v != ""] if not markdown else extra
            if len(present) != len(tail):
                raise TopologyError(
                    f"{where}: row {label} has {len(present)} values after the matrix, the header has "
                    f"{len(tail)} ({', '.join(tail) or 'none'})"
                )
            vals = dict(zip((_TAIL[t] for t in tail), present, strict=True))
            cpu_text = vals.get("cpu", "N/A")
            cpus = None
            if not _na(cpu_text):
                if cpu_text not in parsed:
                    parsed[cpu_text] = checked_cpulist(cpu_text, where, "CPU Affinity")
                    budget -= len(parsed[cpu_text])
                    if budget < 0:
                        raise TopologyError(
                            f"{where}: the CPU Affinity cells name more than {_AFFINITY_BUDGET} cpus in total"
                        )
                cpus = parsed[cpu_text]
            gpus.append(
                SmiGpu(
                    index=_gpu_index(label, where),
                    line=lineno,
                    cpus=cpus,
                    numa_nodes=_ids(vals.get("numa", "N/A"), "NUMA Affinity", where),
                    gpu_numa_ids=_ids(vals.get("gpu_numa", "N/A"), "GPU NUMA ID", where),
                )
            )
        elif any(not _na(v) for v in extra) and len(extra) > len(tail):
            raise TopologyError(
                f"{where}: row {label} has {len(extra)} values after the matrix, header has {len(tail)}"
            )
    missing = [d for d in devices if d not in cells]
    if any(_GPU.match(d) for d in missing) or len(missing) == len(devices):
        shown = ", ".join(missing[:8]) + (", ..." if len(missing) > 8 else "")
        raise TopologyError(
            f"{source}:{hline}: table truncated: the header names {len(devices)} devices but rows for "
            f"{shown} are missing"
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
    canon = {d: d if _GPU.match(d) else nic_labels[d] for d in devices}
    for i, a in enumerate(devices):
        for b in devices[i + 1 :]:
            ab, ba = cells[a][b], cells[b][a]
            if ab != ba:
                raise TopologyError(
                    f"{source}:{row_line[b]}: asymmetric matrix: {b}->{a} is {ba} but {a}->{b} is {ab} "
                    f"(line {row_line[a]})"
                )
            links.append(Link(canon[a], canon[b], "SYS" if ab == "SOC" else ab))
    links, switched = _mark_switched(links)
    if switched:
        notes.append(f"{source}: NVLinks of {', '.join(switched)} add up to more lanes than a GPU has "
                     f"({NVLINK_MAX_LANES}): taken as NVSwitch-ended (Slurm's Links= counts them as 0)")
    names = {v: k for k, v in nic_labels.items() if k != v}
    names.update(_nic_legend(lines))
    return SmiTable(
        tuple(canon[d] for d in devices), tuple(sorted(gpus, key=lambda g: g.index)), tuple(links), names, tuple(notes)
    )


# NVML_NVLINK_MAX_LINKS of nvml.h 12.x: no GPU has more lanes (V100 6, A100 12, H100/H200 18). A GPU whose
# NV<k> relations add up to more cannot be wired directly: its lanes end at NVSwitches (HGX/DGX 8-GPU
# boards print NV12/NV18 to every peer), where NVML reports the switch as the lane's remote end and Slurm's
# AutoDetect=nvml counts no link (src/plugins/gpu/nvml/gpu_nvml.c _nvml_get_nvlink_info, 22.05 and 24.11;
# checked by tests/topology/test_slurm_detection.py).
NVLINK_MAX_LANES = 18


def _mark_switched(links: list[Link]) -> tuple[list[Link], list[str]]:
    lanes: dict[str, int] = {}
    for lk in links:
        if lk.nvlinks and _GPU.match(lk.a) and _GPU.match(lk.b):
            lanes[lk.a] = lanes.get(lk.a, 0) + lk.nvlinks
            lanes[lk.b] = lanes.get(lk.b, 0) + lk.nvlinks
    over = sorted((g for g, n in lanes.items() if n > NVLINK_MAX_LANES), key=lambda g: int(g[3:]))
    if not over:
        return links, []
    out = [replace(lk, switched=True) if lk.nvlinks and (lk.a in over or lk.b in over) else lk for lk in links]
    return out, over


Row = tuple[int, str, list[str], list[str]]  # line number, label, matrix cells, affinity cells


def _text_rows(lines: list[str], hdr_at: int, source: str) -> tuple[list[str], list[Row]]:
    """Rows follow the header; blank lines are skipped until every device has its row. The table
    ends at ``Legend:``, at a blank line once all rows are in, or at the first line that is not a
    row (a prompt, trailing text); a ``GPUn``/``NICn`` label the header lacks is an error."""
    header = _split_header(lines[hdr_at].strip())
    labels = {h for h in header if h not in _TAIL}
    ndev = len(labels)
    rows: list[Row] = []
    seen: set[str] = set()
    for i in range(hdr_at + 1, len(lines)):
        tokens = lines[i].split()
        if not tokens:
            if labels <= seen:
                break
            continue
        if tokens[0].rstrip(":") == "Legend" or tokens[:2] == ["NIC", "Legend:"]:
            break
        if tokens[0] not in labels and not re.fullmatch(r"(GPU|NIC)[0-9]+", tokens[0]):
            break
        seen.add(tokens[0])
        rows.append((i + 1, tokens[0], tokens[1 : 1 + ndev], tokens[1 + ndev :]))
    return header, rows


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
        m = re.match(r"^\s*(NIC[0-9]+):\s*(\S+)\s*$", ln)
        if in_legend and m:
            out[m.group(1)] = m.group(2)
    return out


def topology_from_nvidia_smi(
    text: str,
    layout: CpuLayout | None = None,
    *,
    gpu_defaults: GpuDefaults | None = None,
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
        layout = infer_cpu_layout([(g.cpus, g.numa_node) for g in table.gpus])
    else:
        check_against_lscpu(table, layout, source)
    notes.extend(layout.notes)
    numa = {n.id: n for n in layout.numa_nodes}
    primary = {g.index: primary_numa(g, numa) for g in table.gpus}
    for g in table.gpus:
        k = primary[g.index]
        if k is not None and k not in numa:
            numa[k] = NumaNode(id=k, cpus=g.cpus or ())
        for other in (*(g.numa_nodes or ()), *(g.gpu_numa_ids or ())):
            if other not in numa:
                numa[other] = NumaNode(id=other, cpus=())  # GPU memory as a NUMA node (Grace)
    defaults: GpuDefaults = gpu_defaults or {}
    gpus = [
        Gpu(
            index=g.index,
            name=defaults.get("name"),
            memory_mib=defaults.get("memory_mib"),
            mig_capable=bool(defaults.get("mig_capable", False)),
            numa_node=primary[g.index],
            cpus=g.cpus,
        )
        for g in table.gpus
    ]
    gpu_numa = {f"GPU{g.index}": primary[g.index] for g in table.gpus}
    near: dict[str, set[int]] = {}
    for lk in table.links:
        if lk.kind in PCIE_RELATIONS[:-1]:
            for nic, peer in ((lk.a, lk.b), (lk.b, lk.a)):
                node = gpu_numa.get(peer)
                if node is not None and nic not in gpu_numa:
                    near.setdefault(nic, set()).add(node)
    nics = []
    for k, label in enumerate(d for d in table.devices if not _GPU.match(d)):
        nodes = near.get(label, set())
        nics.append(
            Nic(index=k, name=table.nic_names.get(label, label), numa_node=nodes.pop() if len(nodes) == 1 else None)
        )
    return build_topology(
        layout.threads,
        numa.values(),
        gpus,
        nics,
        table.links,
        memory_mb=memory_mb,
        notes=notes,
        socket_assumption=layout.socket_assumption,
    )
