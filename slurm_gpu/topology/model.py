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

import functools
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, field
from itertools import pairwise
from typing import TYPE_CHECKING, TypedDict

from slurm_gpu.errors import TopologyError
from slurm_gpu.plain import Record, record

if TYPE_CHECKING:
    from slurm_gpu.jsontypes import JsonObject

# Link relations from `nvidia-smi topo -m`, best first. "NV#" is a bonded set of # NVLinks.
PCIE_RELATIONS: tuple[str, ...] = ("PIX", "PXB", "PHB", "NODE", "SYS")
_NV = re.compile(r"^NV([0-9]{1,3})$")
RELATION = re.compile(r"^(X|NV[0-9]{1,3}|PIX|PXB|PHB|NODE|SYS|SOC)$")  # what a topo -m matrix cell may say


MAX_CPUS = 0x8000  # Slurm's MAX_CPUS (gpu_nvml.c); a larger cpu id means a corrupt capture
MAX_GPUS = 1024  # GPU indexes and device columns beyond this mean a corrupt or hostile input
_CPU_ITEM = re.compile(r"([0-9]{1,6})(?:-([0-9]{1,6}))?")
_IDS = tuple(range(MAX_CPUS))  # shared int objects: large affinity lists cost 8 bytes per cpu


class GpuDefaults(TypedDict, total=False):
    """A descriptor's ``gpu:`` block (checked by the loader): what ``nvidia-smi topo -m`` does not print."""

    name: str | None
    memory_mib: int | None
    mig_capable: bool


def clip(value: object, limit: int = 60) -> str:
    """``repr`` of a value cut to ``limit`` characters, for one-line error messages."""
    if isinstance(value, int) and value.bit_length() > 64:
        return "<a huge integer>"
    try:
        r = repr(value)
    except (RecursionError, ValueError):
        return f"<a {type(value).__name__}>"
    return r if len(r) <= limit else r[: limit - 4] + "...'"


def checked_cpulist(text: str, where: str, what: str = "cpu list") -> tuple[int, ...]:
    """A cpu list (``0-55,112-167``) with our error type. Linear in the text and the cpus named:
    ids are checked against MAX_CPUS before any range is expanded, and the ranges together may
    name at most MAX_CPUS cpus (so ``0-32767`` repeated cannot cost quadratic time)."""
    text = text.strip()
    if not text:
        return ()
    parts: list[tuple[int, int]] = []
    total = 0
    for item in text.split(","):
        m = _CPU_ITEM.fullmatch(item.strip())
        if not m:
            raise TopologyError(f"{where}: bad {what} {clip(text)}; expected a cpu list like 0-15,64-79")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise TopologyError(f"{where}: bad {what} {clip(text)}: range {lo}-{hi} runs backwards")
        if hi >= MAX_CPUS:
            raise TopologyError(f"{where}: {what} {clip(text)} names cpu {hi}, beyond Slurm's limit {MAX_CPUS}")
        total += hi - lo + 1
        if total > MAX_CPUS:
            raise TopologyError(f"{where}: {what} {clip(text)} names more than {MAX_CPUS} cpus")
        parts.append((lo, hi))
    if all(parts[i][1] < parts[i + 1][0] for i in range(len(parts) - 1)):  # sorted, disjoint: the norm
        out: list[int] = []
        for lo, hi in parts:
            out.extend(_IDS[lo : hi + 1])
        return tuple(out)
    return tuple(sorted({c for lo, hi in parts for c in _IDS[lo : hi + 1]}))


@functools.lru_cache(maxsize=64)
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


@record
class Cpu(Record):
    """One hardware thread (a Linux "CPU")."""

    os_id: int
    core: int  # Slurm abstract core id
    socket: int
    numa_node: int | None
    thread: int = 0  # index of this thread within its core


@record
class NumaNode(Record):
    """A NUMA node. ``cpus`` may be empty (Grace/GH200 GPU-memory nodes)."""

    id: int
    cpus: tuple[int, ...]
    socket: int | None = None
    memory_mb: int | None = None


@record
class Gpu(Record):
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


@record
class Nic(Record):
    """A network adapter and where it sits."""

    index: int
    name: str
    numa_node: int | None = None
    pci_bus_id: str | None = None


@record
class Link(Record):
    """The relation between two devices named ``GPU<i>`` / ``NIC<i>``: ``NV18``, ``PIX`` ... ``SYS``."""

    a: str
    b: str
    kind: str
    switched: bool = False  # NVLinks end at an NVSwitch (known from hwloc/NVML, not from topo -m)

    @property
    def nvlinks(self) -> int:
        return nvlink_count(self.kind)


@record
class Topology(Record):
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
    # How sockets were found when no CPU listing was given (e.g. derived from disjoint GPU affinity
    # sets); None when they come from lscpu, hwloc or sysfs. The CLI prints it on stderr.
    socket_assumption: str | None = field(default=None, compare=False)

    # -- indexes (built once per Topology; every lookup below is O(1) or O(answer)) ---------------
    @functools.cached_property
    def _index(self) -> _Index:
        return _Index(self)

    # -- lookups ---------------------------------------------------------------------------------
    def gpu(self, index: int) -> Gpu:
        g = self._index.gpus.get(index)
        if g is None:
            raise TopologyError(f"no GPU with index {index}; this node has {len(self.gpus)} GPUs")
        return g

    def gpu_cpus(self, index: int) -> tuple[int, ...]:
        """OS cpu ids local to a GPU: its own affinity, else its NUMA node's cpus, else ()."""
        g = self.gpu(index)
        if g.cpus is not None:
            return g.cpus
        if g.numa_node is not None:
            node = self._index.numa.get(g.numa_node)
            if node is not None:
                return node.cpus
        return ()

    def gpu_cores(self, index: int) -> tuple[int, ...]:
        """Slurm abstract core ids local to a GPU (() if unknown)."""
        return self.cpus_cores(self.gpu_cpus(index))

    def cpus_cores(self, os_ids: tuple[int, ...]) -> tuple[int, ...]:
        """Slurm abstract core ids holding any of these OS cpus (unknown ids are ignored)."""
        idx = self._index
        hit = idx.cores_of_cpus.get(id(os_ids))  # by identity: GPUs share their affinity tuple
        if hit is not None and hit[0] is os_ids:
            return hit[1]
        core_of = idx.core_of
        got = tuple(sorted({core_of[c] for c in os_ids if c in core_of}))
        if len(idx.cores_of_cpus) < 4096:
            idx.cores_of_cpus[id(os_ids)] = (os_ids, got)
        return got

    def core_socket(self, core_id: int) -> int:
        s = self._index.core_socket.get(core_id)
        if s is None:
            raise TopologyError(f"no core with abstract id {core_id}; cores are 0-{self.total_cores - 1}")
        return s

    def socket_cores(self, socket: int) -> tuple[int, ...]:
        return self._index.socket_cores.get(socket, ())

    def socket_cpus(self, socket: int) -> tuple[int, ...]:
        """OS cpu ids (hardware threads) of one socket."""
        return self._index.socket_cpus.get(socket, ())

    def core_cpus(self, core_id: int) -> tuple[int, ...]:
        """OS cpu ids (hardware threads) of one abstract core."""
        return self._index.core_cpus.get(core_id, ())

    def numa_cores(self, node_id: int) -> tuple[int, ...]:
        """Abstract core ids with a thread in this NUMA node."""
        node = self._index.numa.get(node_id)
        return self.cpus_cores(node.cpus) if node is not None else ()

    def gpu_socket(self, index: int) -> int | None:
        """The socket holding the GPU's local cores, or None if unknown or spread over sockets."""
        cores = self.gpu_cores(index)
        memo = self._index.socket_of_cores
        hit = memo.get(id(cores))
        if hit is not None and hit[0] is cores:
            return hit[1]
        sockets = {self.core_socket(c) for c in cores}
        answer = sockets.pop() if len(sockets) == 1 else None
        if len(memo) < 4096:
            memo[id(cores)] = (cores, answer)
        return answer

    def link_object(self, a: str, b: str) -> Link | None:
        return self._index.links.get((a, b))

    def link(self, a: str, b: str) -> str | None:
        """Relation between two devices (``"GPU0"``, ``"NIC3"``); None if not recorded."""
        lk = self._index.links.get((a, b))
        return None if lk is None else lk.kind

    @property
    def total_cores(self) -> int:
        return len({c.core for c in self.cpus})

    @property
    def total_cpus(self) -> int:
        return len(self.cpus)

    # -- serialisation ---------------------------------------------------------------------------
    def to_json(self) -> JsonObject:
        return asdict(self)


class _Index:
    """Lookup tables for one Topology (private; built lazily by ``Topology._index``)."""

    def __init__(self, topo: Topology) -> None:
        self.gpus = {g.index: g for g in topo.gpus}
        self.numa = {n.id: n for n in topo.numa_nodes}
        self.links: dict[tuple[str, str], Link] = {}
        for lk in topo.links:
            self.links.setdefault((lk.a, lk.b), lk)
            self.links.setdefault((lk.b, lk.a), lk)
        self.core_of = {c.os_id: c.core for c in topo.cpus}
        self.core_socket: dict[int, int] = {}
        core_cpus: dict[int, list[int]] = {}
        socket_cores: dict[int, set[int]] = {}
        socket_cpus: dict[int, list[int]] = {}
        for c in topo.cpus:
            self.core_socket.setdefault(c.core, c.socket)
            core_cpus.setdefault(c.core, []).append(c.os_id)
            socket_cores.setdefault(c.socket, set()).add(c.core)
            socket_cpus.setdefault(c.socket, []).append(c.os_id)
        self.core_cpus = {k: tuple(sorted(v)) for k, v in core_cpus.items()}
        self.socket_cores = {k: tuple(sorted(v)) for k, v in socket_cores.items()}
        self.socket_cpus = {k: tuple(sorted(v)) for k, v in socket_cpus.items()}
        # memos keyed by id() of a tuple they keep alive (hashing a 32768-cpu tuple is O(n))
        self.cores_of_cpus: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        self.socket_of_cores: dict[int, tuple[tuple[int, ...], int | None]] = {}


@record
class Thread(Record):
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
    socket_assumption: str | None = None,
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
        if not 0 <= t.os_id < MAX_CPUS:
            raise TopologyError(f"cpu id {clip(t.os_id)} is beyond Slurm's limit {MAX_CPUS}")
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
    count = Counter(k[0] for k in cores)
    per_socket = [count[s] for s in socket_ids]
    note_list = list(notes)
    if len(set(per_socket)) > 1:
        shown = ", ".join(map(str, per_socket[:8])) + (", ..." if len(per_socket) > 8 else "")
        note_list.append(f"sockets have different core counts [{shown}]; CoresPerSocket uses the largest")
    threads_per_core = max(len(v) for v in cores.values())
    gpus_t = tuple(sorted(gpus, key=lambda g: g.index))
    if len(gpus_t) > MAX_GPUS:
        raise TopologyError(f"{len(gpus_t)} GPUs; at most {MAX_GPUS} are supported per node")
    for a, b in pairwise(gpus_t):
        if a.index == b.index:
            raise TopologyError(f"GPU index {a.index} appears twice; each GPU needs its own index")
    all_ids = seen
    checked: set[tuple[int, ...]] = set()  # GPUs often share one affinity tuple: check it once
    for g in gpus_t:
        if g.cpus is None or g.cpus in checked:
            continue
        checked.add(g.cpus)
        if not all_ids.issuperset(g.cpus):
            bad = sorted(set(g.cpus) - all_ids)
            raise TopologyError(
                f"GPU{g.index} affinity has cpus {bad[:4]} outside the node's cpus "
                f"(0-{max(all_ids)}); the capture and the CPU listing disagree"
            )
    nodes = tuple(sorted(numa_nodes, key=lambda nn: nn.id))
    for n1, n2 in pairwise(nodes):
        if n1.id == n2.id:
            raise TopologyError(f"NUMA node {n1.id} appears twice")
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
        socket_assumption=socket_assumption,
    )
