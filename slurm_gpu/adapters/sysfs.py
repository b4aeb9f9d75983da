# SPDX-License-Identifier: Apache-2.0
"""Read the live node's CPU, NUMA and PCI layout from sysfs (no driver needed).

Sources: ``/sys/devices/system/cpu/cpuN/topology/{physical_package_id,core_id}`` (online cpus),
``/sys/devices/system/node/nodeN/{cpulist,meminfo}``, ``/sys/bus/pci/devices/*/{vendor,class,
numa_node,local_cpulist}`` and ``/proc/meminfo``. ``root`` lets tests point at a recorded tree.
"""

from __future__ import annotations

import re
from pathlib import Path

from slurm_gpu.cpulist import parse_cpulist
from slurm_gpu.digits import is_digits
from slurm_gpu.errors import TopologyError
from slurm_gpu.plain import Record, record
from slurm_gpu.topology.model import NumaNode, Thread

NVIDIA_VENDOR = "0x10de"


@record
class PciDevice(Record):
    bus_id: str  # 0000:34:00.0 (lower case, 4-digit domain)
    vendor: str
    pci_class: str  # 0x030200
    numa_node: int | None
    local_cpus: tuple[int, ...] | None
    net_names: tuple[str, ...] = ()


@record
class SysfsNode(Record):
    threads: tuple[Thread, ...]
    numa_nodes: tuple[NumaNode, ...]
    pci: tuple[PciDevice, ...]
    memory_mb: int | None

    def nvidia_gpus(self) -> tuple[PciDevice, ...]:
        """NVIDIA display/3D controllers (class 03xx), in PCI bus id order (Slurm's device order)."""
        return tuple(
            sorted(
                (d for d in self.pci if d.vendor == NVIDIA_VENDOR and d.pci_class.startswith("0x03")),
                key=lambda d: d.bus_id,
            )
        )

    def nics(self) -> tuple[PciDevice, ...]:
        return tuple(d for d in self.pci if d.pci_class.startswith("0x02"))


def normalise_bus_id(bus_id: str) -> str:
    """``00000000:34:00.0`` (NVML) or ``0000:34:00.0`` (sysfs) -> ``0000:34:00.0``."""
    m = re.fullmatch(r"([0-9a-fA-F]+):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])", bus_id.strip())
    if not m:
        raise TopologyError(f"bad PCI bus id {bus_id!r}; expected DDDD:BB:DD.F")
    return f"{int(m.group(1), 16):04x}:{m.group(2)}:{m.group(3)}.{m.group(4)}".lower()


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _one(values: set[int]) -> int | None:
    return next(iter(values)) if len(values) == 1 else None


def read_sysfs(root: str | Path = "/") -> SysfsNode:
    """Read the node. Raises TopologyError if no cpu topology is readable."""
    base = Path(root)
    cpu_dir = base / "sys/devices/system/cpu"
    online_text = _read(cpu_dir / "online")
    node_dir = base / "sys/devices/system/node"
    numa: list[NumaNode] = []
    cpu_node: dict[int, int] = {}
    for d in sorted(node_dir.glob("node[0-9]*"), key=lambda p: int(p.name[4:])):
        nid = int(d.name[4:])
        cpus = parse_cpulist(_read(d / "cpulist") or "")
        mem_kb = None
        m = re.search(r"MemTotal:\s+([0-9]+) kB", _read(d / "meminfo") or "")
        if m:
            mem_kb = int(m.group(1))
        numa.append(NumaNode(id=nid, cpus=cpus, memory_mb=None if mem_kb is None else mem_kb // 1024))
        cpu_node.update({c: nid for c in cpus})
    cpus = (
        parse_cpulist(online_text) if online_text else tuple(sorted(int(p.name[3:]) for p in cpu_dir.glob("cpu[0-9]*")))
    )
    threads = []
    for c in cpus:
        topo = cpu_dir / f"cpu{c}" / "topology"
        pkg, core = _read(topo / "physical_package_id"), _read(topo / "core_id")
        if pkg is None or core is None or not is_digits(pkg.lstrip("-")) or not is_digits(core):
            raise TopologyError(f"cannot read {topo}/physical_package_id or core_id; is sysfs mounted?")
        threads.append(Thread(os_id=c, socket=max(int(pkg), 0), core_key=int(core), numa_node=cpu_node.get(c)))
    if not threads:
        raise TopologyError(f"no cpus under {cpu_dir}; is sysfs mounted?")
    sockets = {t.os_id: t.socket for t in threads}
    numa = [NumaNode(n.id, n.cpus, _one({sockets[c] for c in n.cpus if c in sockets}), n.memory_mb) for n in numa]
    pci = []
    for d in sorted((base / "sys/bus/pci/devices").glob("*")):
        vendor, cls = _read(d / "vendor"), _read(d / "class")
        if vendor is None or cls is None:
            continue
        node_text = _read(d / "numa_node")
        local = _read(d / "local_cpulist")
        # virtio and some drivers put net/ one level down (…/0000:00:03.0/virtio0/net/eth0)
        nets = tuple(sorted({p.name for pat in ("infiniband/*", "net/*", "*/net/*") for p in d.glob(pat)}))
        pci.append(
            PciDevice(
                bus_id=normalise_bus_id(d.name),
                vendor=vendor.lower(),
                pci_class=cls.lower(),
                numa_node=int(node_text) if node_text and is_digits(node_text) else None,  # -1 = no NUMA info
                local_cpus=parse_cpulist(local) if local else None,
                net_names=nets,
            )
        )
    m = re.search(r"MemTotal:\s+([0-9]+) kB", _read(base / "proc/meminfo") or "")
    return SysfsNode(tuple(threads), tuple(numa), tuple(pci), int(m.group(1)) // 1024 if m else None)
