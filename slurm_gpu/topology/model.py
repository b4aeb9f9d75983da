# SPDX-License-Identifier: Apache-2.0
"""The node topology model: sockets, NUMA nodes, cores, hardware threads, GPUs, NICs and links.

Pure data (frozen dataclasses), serialisable with ``to_json()`` / ``topology_from_json()``.

Two CPU numberings live side by side:
- OS cpu ids (``Cpu.os_id``, ``Gpu.cpus``, ``NumaNode.cpus``): what Linux, ``taskset`` and
  ``nvidia-smi`` print;
- Slurm abstract core ids (``Cpu.core``): Slurm numbers cores socket by socket in hwloc logical
  order (``xcpuinfo_mac_to_abs``). gres.conf ``Cores=`` uses these. On a DGX A100 (NPS4) OS cpus
  48-63,176-191 are abstract cores 48-63.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from slurm_gpu.cpulist import parse_cpulist
from slurm_gpu.errors import TopologyError

# Link relations from `nvidia-smi topo -m`, best first. "NV#" is a bonded set of # NVLinks.
PCIE_RELATIONS: tuple[str, ...] = ("PIX", "PXB", "PHB", "NODE", "SYS")
_NV = re.compile(r"^NV(\d+)$")


MAX_CPUS = 0x8000  # Slurm's MAX_CPUS (gpu_nvml.c); a larger cpu id means a corrupt capture
_CPULIST = re.compile(r"\d{1,6}(-\d{1,6})?(,\d{1,6}(-\d{1,6})?)*")


def checked_cpulist(text: str, where: str, what: str = "cpu list") -> tuple[int, ...]:
    """``parse_cpulist`` with our error type and a bound on the ids (no 0-99999999 blow-ups)."""
    text = text.strip()
    if not text:
        return ()
    if not _CPULIST.fullmatch(text):
        raise TopologyError(f"{where}: bad {what} {text!r}; expected a cpu list like 0-15,64-79")
    try:
        cpus = parse_cpulist(text)
    except ValueError as e:
        raise TopologyError(f"{where}: bad {what} {text!r}: {e}") from None
    if cpus and cpus[-1] >= MAX_CPUS:
        raise TopologyError(f"{where}: {what} {text!r} names cpu {cpus[-1]}, beyond Slurm's limit {MAX_CPUS}")
    return cpus


def relation_rank(kind: str) -> int:
    """Smaller is closer: NVLink 0, then PIX 1 ... SYS 5. Unknown relations rank last."""
    if _NV.match(kind):
        return 0
    try:
        return 1 + PCIE_RELATIONS.index(kind)
    except ValueError:
        return len(PCIE_RELATIONS) + 1


def nvlink_count(kind: str) -> int:
    """``"NV18"`` -> 18; any PCIe relation -> 0."""
    m = _NV.match(kind)
    return int(m.group(1)) if m else 0


@dataclass(frozen=True)
class Cpu:
    """One hardware thread (a Linux "CPU")."""

    os_id: int
    core: int  # Slurm abstract core id
    socket: int
    numa_node: int | None
    thread: int = 0  # index of this thread within its core


@dataclass(frozen=True)
class NumaNode:
    """A NUMA node. ``cpus`` may be empty (Grace/GH200 GPU-memory nodes)."""

    id: int
    cpus: tuple[int, ...]
    socket: int | None = None
    memory_mb: int | None = None


@dataclass(frozen=True)
class Gpu:
    """One GPU. ``cpus`` are the OS cpu ids local to it (None = unknown, e.g. ``N/A`` in a VM)."""

    index: int
    minor: int | None = None  # /dev/nvidia<minor>
    pci_bus_id: str | None = None
    uuid: str | None = None
    name: str | None = None
    memory_mib: int | None = None
    numa_node: int | None = None
    cpus: tuple[int, ...] | None = None
    mig_capable: bool = False

    @property
    def device_minor(self) -> int:
        """The /dev/nvidia minor; assumed equal to the index when the source did not say."""
        return self.index if self.minor is None else self.minor


@dataclass(frozen=True)
class Nic:
    """A network adapter and where it sits."""

    index: int
    name: str
    numa_node: int | None = None
    pci_bus_id: str | None = None


@dataclass(frozen=True)
class Link:
    """The relation between two devices named ``GPU<i>`` / ``NIC<i>``: ``NV18``, ``PIX`` ... ``SYS``."""

    a: str
    b: str
    kind: str
    switched: bool = False  # NVLinks end at an NVSwitch (known from hwloc/NVML, not from topo -m)

    @property
    def nvlinks(self) -> int:
        return nvlink_count(self.kind)


@dataclass(frozen=True)
class Topology:
    """One node type. Build it with ``build_topology`` (which numbers the cores) or a parser."""

    sockets: int
    cores_per_socket: int
    threads_per_core: int
    memory_mb: int | None
    numa_nodes: tuple[NumaNode, ...]
    cpus: tuple[Cpu, ...]
    gpus: tuple[Gpu, ...]
    nics: tuple[Nic, ...] = ()
    links: tuple[Link, ...] = ()
    notes: tuple[str, ...] = field(default=(), compare=False)  # assumptions made while parsing

    # -- lookups ---------------------------------------------------------------------------------
    def gpu(self, index: int) -> Gpu:
        for g in self.gpus:
            if g.index == index:
                return g
        raise TopologyError(f"no GPU with index {index}; this node has {len(self.gpus)} GPUs")

    def gpu_cpus(self, index: int) -> tuple[int, ...]:
        """OS cpu ids local to a GPU: its own affinity, else its NUMA node's cpus, else ()."""
        g = self.gpu(index)
        if g.cpus is not None:
            return g.cpus
        if g.numa_node is not None:
            for n in self.numa_nodes:
                if n.id == g.numa_node:
                    return n.cpus
        return ()

    def gpu_cores(self, index: int) -> tuple[int, ...]:
        """Slurm abstract core ids local to a GPU (() if unknown)."""
        wanted = set(self.gpu_cpus(index))
        return tuple(sorted({c.core for c in self.cpus if c.os_id in wanted}))

    def core_socket(self, core_id: int) -> int:
        for c in self.cpus:
            if c.core == core_id:
                return c.socket
        raise TopologyError(f"no core with abstract id {core_id}; cores are 0-{self.total_cores - 1}")

    def socket_cores(self, socket: int) -> tuple[int, ...]:
        return tuple(sorted({c.core for c in self.cpus if c.socket == socket}))

    def core_cpus(self, core_id: int) -> tuple[int, ...]:
        """OS cpu ids (hardware threads) of one abstract core."""
        return tuple(sorted(c.os_id for c in self.cpus if c.core == core_id))

    def gpu_socket(self, index: int) -> int | None:
        """The socket holding the GPU's local cores, or None if unknown or spread over sockets."""
        sockets = {self.core_socket(c) for c in self.gpu_cores(index)}
        return sockets.pop() if len(sockets) == 1 else None

    def link_object(self, a: str, b: str) -> Link | None:
        for lk in self.links:
            if (lk.a == a and lk.b == b) or (lk.a == b and lk.b == a):
                return lk
        return None

    def link(self, a: str, b: str) -> str | None:
        """Relation between two devices (``"GPU0"``, ``"NIC3"``); None if not recorded."""
        lk = self.link_object(a, b)
        return None if lk is None else lk.kind

    @property
    def total_cores(self) -> int:
        return len({c.core for c in self.cpus})

    @property
    def total_cpus(self) -> int:
        return len(self.cpus)

    # -- serialisation ---------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _tuple_or_none(v: Iterable[int] | None) -> tuple[int, ...] | None:
    return None if v is None else tuple(v)


def topology_from_json(data: dict[str, Any]) -> Topology:
    """Inverse of ``Topology.to_json()``. Raises TopologyError on a wrong shape."""
    try:
        return Topology(
            sockets=int(data["sockets"]),
            cores_per_socket=int(data["cores_per_socket"]),
            threads_per_core=int(data["threads_per_core"]),
            memory_mb=data.get("memory_mb"),
            numa_nodes=tuple(NumaNode(**{**n, "cpus": tuple(n["cpus"])}) for n in data["numa_nodes"]),
            cpus=tuple(Cpu(**c) for c in data["cpus"]),
            gpus=tuple(Gpu(**{**g, "cpus": _tuple_or_none(g.get("cpus"))}) for g in data["gpus"]),
            nics=tuple(Nic(**n) for n in data.get("nics", ())),
            links=tuple(Link(**lk) for lk in data.get("links", ())),
            notes=tuple(data.get("notes", ())),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise TopologyError(f"bad topology JSON: {e!r}; expected the shape of Topology.to_json()") from None


@dataclass(frozen=True)
class Thread:
    """Parser output for one hardware thread before Slurm numbering: ``core_key`` identifies the
    physical core (unique together with the socket); ``order`` is its hwloc logical position."""

    os_id: int
    socket: int
    core_key: int
    numa_node: int | None
    order: int = 0


def build_topology(
    threads: Iterable[Thread],
    numa_nodes: Iterable[NumaNode],
    gpus: Iterable[Gpu] = (),
    nics: Iterable[Nic] = (),
    links: Iterable[Link] = (),
    memory_mb: int | None = None,
    notes: Iterable[str] = (),
) -> Topology:
    """Number cores the way Slurm does and check the pieces fit together.

    Slurm's abstract core ids run socket by socket (sockets in ascending id order); within a socket
    cores follow hwloc's logical order, approximated by ``Thread.order`` then the lowest OS cpu id.
    """
    ths = sorted(threads, key=lambda t: t.os_id)
    if not ths:
        raise TopologyError("no CPUs found; expected at least one CPU in the capture")
    seen: set[int] = set()
    for t in ths:
        if t.os_id in seen:
            raise TopologyError(f"cpu {t.os_id} listed twice")
        seen.add(t.os_id)
    cores: dict[tuple[int, int], list[Thread]] = {}
    for t in ths:
        cores.setdefault((t.socket, t.core_key), []).append(t)
    ordered = sorted(cores, key=lambda k: (k[0], min((t.order, t.os_id) for t in cores[k])))
    cpus: list[Cpu] = []
    for abstract, key in enumerate(ordered):
        for n, t in enumerate(sorted(cores[key], key=lambda t: t.os_id)):
            cpus.append(Cpu(os_id=t.os_id, core=abstract, socket=t.socket, numa_node=t.numa_node, thread=n))
    socket_ids = sorted({k[0] for k in cores})
    per_socket = [sum(1 for k in cores if k[0] == s) for s in socket_ids]
    note_list = list(notes)
    if len(set(per_socket)) > 1:
        note_list.append(f"sockets have different core counts {per_socket}; CoresPerSocket uses the largest")
    threads_per_core = max(len(v) for v in cores.values())
    gpus_t = tuple(sorted(gpus, key=lambda g: g.index))
    all_ids = seen
    for g in gpus_t:
        if g.cpus is not None and not set(g.cpus) <= all_ids:
            bad = sorted(set(g.cpus) - all_ids)
            raise TopologyError(
                f"GPU{g.index} affinity has cpus {bad[:4]} outside the node's cpus "
                f"(0-{max(all_ids)}); the capture and the CPU listing disagree"
            )
    nodes = tuple(sorted(numa_nodes, key=lambda nn: nn.id))
    for node in nodes:
        if not set(node.cpus) <= all_ids:
            raise TopologyError(f"NUMA node {node.id} lists cpus outside the node's cpus (0-{max(all_ids)})")
    return Topology(
        sockets=len(socket_ids),
        cores_per_socket=max(per_socket),
        threads_per_core=threads_per_core,
        memory_mb=memory_mb,
        numa_nodes=nodes,
        cpus=tuple(sorted(cpus, key=lambda c: c.os_id)),
        gpus=gpus_t,
        nics=tuple(nics),
        links=tuple(links),
        notes=tuple(note_list),
    )
