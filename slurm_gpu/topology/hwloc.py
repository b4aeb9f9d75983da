# SPDX-License-Identifier: Apache-2.0
"""Parse hwloc v2 XML (``lstopo --of xml``) with ElementTree.

CPUs: ``PU`` objects (OS ids) under ``Core`` objects (document order = hwloc logical order) under
``Package``. GPUs: ``PCIDev`` with an NVIDIA vendor id (10de) and display class 03xx; the index comes
from an ``nvmlN`` OS device when present, else from PCI bus id order (Slurm's device order). A GPU's
locality is the cpuset/nodeset of its first non-I/O ancestor. NVLink counts come from the
``NVLinkBandwidth`` matrix; links that end at an NVSwitch are marked ``switched``.
"""

from __future__ import annotations

import functools
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable

from slurm_gpu.errors import TopologyError
from slurm_gpu.topology.model import MAX_GPUS, Gpu, Link, Nic, NumaNode, Thread, Topology, build_topology, clip

_IO = {"Bridge", "PCIDev", "OSDev", "Misc"}
_NVIDIA_GPU = re.compile(r"^03\w\w \[10de:")
_NIC = re.compile(r"^02\w\w ")
_MAX_BITS = 0x8000
_MAX_DEPTH = 128  # lstopo XML nests about a dozen levels; 100,000 means a hostile file


def parse_bitmap(text: str, where: str) -> frozenset[int]:
    """hwloc bitmap ``0x00000303,0x03030000,,0x03030303`` (32-bit words, most significant first)."""
    bits = _bitmap(text.strip())
    if isinstance(bits, str):
        raise TopologyError(f"{where}: {bits}")
    return bits


@functools.lru_cache(maxsize=256)
def _bitmap(text: str) -> frozenset[int] | str:
    """The bits, or the problem as text (cached: every GPU and NIC repeats its parent's cpuset)."""
    if text.startswith("0xf...f"):
        return f"infinite bitmap {clip(text)} is not supported"
    words = text.split(",")
    if len(words) * 32 > _MAX_BITS:
        return f"bitmap {clip(text)} is too large"
    bits: set[int] = set()
    for pos, word in enumerate(reversed(words)):
        w = word.strip()
        if not w:
            continue
        if not re.fullmatch(r"0x[0-9a-fA-F]{1,8}", w):
            return f"bad bitmap word {clip(w)} in {clip(text)}; expected 0xXXXXXXXX words"
        value = int(w, 16)
        bits.update(pos * 32 + b for b in range(32) if value >> b & 1)
    return frozenset(bits)


def _attr_int(el: ET.Element, name: str, where: str) -> int:
    v = el.get(name)
    if v is None or not re.fullmatch(r"[0-9]{1,9}", v):
        raise TopologyError(f"{where}: {clip(el.get('type'))} object needs an integer {name}=, got {clip(v)}")
    return int(v)


def topology_from_hwloc(text: str, source: str = "hwloc XML") -> Topology:
    """Build a Topology from hwloc v2 XML text. Raises TopologyError for malformed input."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise TopologyError(f"{source}:{e.position[0]}: not well-formed XML: {e}") from None
    if root.tag != "topology":
        raise TopologyError(f"{source}: root element is <{root.tag}>, expected <topology> (hwloc XML)")
    version = root.get("version", "1")
    if not version.startswith("2."):
        raise TopologyError(f"{source}: hwloc XML version {version!r}; expected 2.x (lstopo from hwloc 2)")
    top = root.find("object")
    if top is None:
        raise TopologyError(f"{source}: no <object> in the topology")
    parents: dict[ET.Element, ET.Element] = {}
    depth: dict[ET.Element, int] = {top: 1}
    for p in root.iter("object"):  # document order: a parent comes before its children
        for ch in p.findall("object"):
            parents[ch] = p
            depth[ch] = depth.get(p, 1) + 1
            if depth[ch] > _MAX_DEPTH:
                raise TopologyError(f"{source}: objects nested deeper than {_MAX_DEPTH} levels; not an lstopo XML")

    def ancestors(el: ET.Element) -> list[ET.Element]:
        out = []
        while el in parents:
            el = parents[el]
            out.append(el)
        return out

    numa_nodes: list[NumaNode] = []
    numa_by_bit: dict[int, int] = {}
    for el in root.iter("object"):
        if el.get("type") == "NUMANode":
            nid = _attr_int(el, "os_index", source)
            cpus = parse_bitmap(el.get("cpuset", ""), source)
            mem = el.get("local_memory")
            sock = next((a for a in ancestors(el) if a.get("type") == "Package"), None)
            numa_nodes.append(
                NumaNode(
                    id=nid,
                    cpus=tuple(sorted(cpus)),
                    socket=None if sock is None else _attr_int(sock, "os_index", source),
                    memory_mb=int(mem) // 2**20 if mem and re.fullmatch(r"[0-9]{1,20}", mem) else None,
                )
            )
            for b in parse_bitmap(el.get("nodeset", ""), source):
                numa_by_bit[b] = nid
    cpu_numa = {c: n.id for n in numa_nodes for c in n.cpus}
    threads: list[Thread] = []
    for order, core in enumerate(el for el in root.iter("object") if el.get("type") == "Core"):
        sock = next((a for a in ancestors(core) if a.get("type") == "Package"), None)
        socket = 0 if sock is None else _attr_int(sock, "os_index", source)
        for pu in core.iter("object"):
            if pu.get("type") == "PU":
                os_id = _attr_int(pu, "os_index", source)
                threads.append(Thread(os_id, socket, core_key=order, numa_node=cpu_numa.get(os_id), order=order))
    if not threads:  # no Core level: each PU is its own core
        for order, pu in enumerate(el for el in root.iter("object") if el.get("type") == "PU"):
            os_id = _attr_int(pu, "os_index", source)
            threads.append(Thread(os_id, 0, core_key=order, numa_node=cpu_numa.get(os_id), order=order))

    def locality(el: ET.Element) -> tuple[tuple[int, ...] | None, int | None]:
        anc = next((a for a in ancestors(el) if a.get("type") not in _IO), None)
        if anc is None:
            return None, None
        cpus = tuple(sorted(parse_bitmap(anc.get("cpuset", ""), source))) or None
        nodes = {numa_by_bit.get(b) for b in parse_bitmap(anc.get("nodeset", ""), source)}
        return cpus, (nodes.pop() if len(nodes) == 1 else None)

    pcidevs = [el for el in root.iter("object") if el.get("type") == "PCIDev"]
    gpu_els = [el for el in pcidevs if _NVIDIA_GPU.match(el.get("pci_type", ""))]
    if len(gpu_els) > MAX_GPUS:
        raise TopologyError(f"{source}: {len(gpu_els)} NVIDIA GPUs; at most {MAX_GPUS} are supported per node")
    nvml_index: dict[ET.Element, int] = {}
    info: dict[ET.Element, dict[str, str]] = {}
    for el in gpu_els:
        info[el] = {}
        for os_dev in el.findall("object"):
            m = re.fullmatch(r"nvml([0-9]{1,4})", os_dev.get("name", ""))
            if m:
                nvml_index[el] = int(m.group(1))
                info[el] = {i.get("name", ""): i.get("value", "") for i in os_dev.findall("info")}
    if len(nvml_index) != len(gpu_els) or len(set(nvml_index.values())) != len(gpu_els):
        nvml_index = {el: i for i, el in enumerate(sorted(gpu_els, key=lambda e: e.get("pci_busid", "")))}
    gpus: list[Gpu] = []
    label: dict[ET.Element, str] = {}
    for el in gpu_els:
        gpu_cpus, node = locality(el)
        idx = nvml_index[el]
        label[el] = f"GPU{idx}"
        gpus.append(
            Gpu(
                index=idx,
                pci_bus_id=el.get("pci_busid"),
                uuid=info[el].get("NVIDIAUUID"),
                name=info[el].get("GPUModel"),
                numa_node=node,
                cpus=gpu_cpus,
            )
        )
    nics: list[Nic] = []
    for el in pcidevs:
        if _NIC.match(el.get("pci_type", "")):
            names = {o.get("osdev_type", ""): o.get("name", "") for o in el.findall("object")}
            name = names.get("3") or names.get("2") or el.get("pci_busid") or f"nic{len(nics)}"
            label[el] = f"NIC{len(nics)}"
            nics.append(Nic(index=len(nics), name=name, numa_node=locality(el)[1], pci_bus_id=el.get("pci_busid")))
    links = _pcie_links(gpu_els, label, ancestors, locality)
    links = _apply_nvlinks(root, links, gpu_els, label, source)
    memory_mb = sum(n.memory_mb or 0 for n in numa_nodes) or None
    return build_topology(threads, numa_nodes, gpus, nics, links, memory_mb=memory_mb)


def _pcie_links(
    gpu_els: list[ET.Element],
    label: dict[ET.Element, str],
    ancestors: Callable[[ET.Element], list[ET.Element]],
    locality: Callable[[ET.Element], tuple[tuple[int, ...] | None, int | None]],
) -> list[Link]:
    anc = {g: ancestors(g) for g in gpu_els}
    anc_set = {g: set(v) for g, v in anc.items()}

    def relation(a: ET.Element, b: ET.Element) -> str:
        anc_a, anc_b = anc[a], anc[b]
        common = next((x for x in anc_a if x in anc_set[b]), None)
        if common is None or common.get("type") not in _IO:
            node_a, node_b = locality(a)[1], locality(b)[1]
            return "NODE" if node_a is not None and node_a == node_b else "SYS"
        if common.get("bridge_type", "").startswith("0-"):
            return "PHB"
        if common is anc_a[0] and common is anc_b[0]:
            return "PIX"
        return "PXB"

    out = []
    ordered = sorted(gpu_els, key=lambda e: int(label[e][3:]))
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 :]:
            out.append(Link(label[a], label[b], relation(a, b)))
    return out


def _apply_nvlinks(
    root: ET.Element, links: list[Link], gpu_els: list[ET.Element], label: dict[ET.Element, str], source: str
) -> list[Link]:
    """Replace PCIe relations with NV<n> from the NVLinkBandwidth matrix (hwloc reports MB/s)."""
    dist = next((d for d in root.iter("distances2hetero") if d.get("name") == "NVLinkBandwidth"), None)
    if dist is None:
        return links
    by_gp = {}
    for el in root.iter("object"):
        if el.get("gp_index"):
            by_gp[f"{el.get('type')}:{el.get('gp_index')}"] = el
    owner = {}
    for g in gpu_els:
        for os_dev in g.findall("object"):
            owner[os_dev] = g
        owner[g] = g
    idx = " ".join(i.text or "" for i in dist.findall("indexes")).split()
    vals_text = " ".join(v.text or "" for v in dist.findall("u64values")).split()
    n = len(idx)
    if len(vals_text) != n * n or not all(re.fullmatch(r"[0-9]{1,15}", v) for v in vals_text):
        raise TopologyError(f"{source}: NVLinkBandwidth has {len(vals_text)} values for {n} objects; expected {n * n}")
    vals = [int(v) for v in vals_text]
    objs = [by_gp.get(i) for i in idx]

    def count(bw: int) -> int:
        for per_link in (25000, 20000, 50000):  # NVLink 2-4: 25 GB/s, NVLink 1: 20 GB/s per link
            if bw % per_link == 0:
                return min(bw // per_link, 999)
        return min(max(1, round(bw / 25000)), 999)

    gpu_at = {i: label[owner[o]] for i, o in enumerate(objs) if o is not None and o in owner}
    switch_at = [i for i, o in enumerate(objs) if o is not None and o.get("subtype") == "NVSwitch"]
    direct: dict[frozenset[str], int] = {}
    via_switch: dict[str, int] = {}
    for i, gi in gpu_at.items():
        for j, gj in gpu_at.items():
            if i < j and vals[i * n + j]:
                direct[frozenset((gi, gj))] = count(vals[i * n + j])
        s = sum(count(vals[i * n + k]) for k in switch_at if vals[i * n + k])
        if s:
            via_switch[gi] = min(s, 999)
    out = []
    for lk in links:
        key = frozenset((lk.a, lk.b))
        if key in direct:
            out.append(Link(lk.a, lk.b, f"NV{direct[key]}"))
        elif lk.a in via_switch and lk.b in via_switch:
            out.append(Link(lk.a, lk.b, f"NV{min(via_switch[lk.a], via_switch[lk.b])}", switched=True))
        else:
            out.append(lk)
    return out
