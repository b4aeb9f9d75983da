# SPDX-License-Identifier: Apache-2.0
"""The live node through NVML (nvidia-ml-py, imported lazily) plus sysfs.

``NvmlInventory`` (role: GpuInventory) reads what Slurm's AutoDetect=nvml reads: name, UUID, PCI
bus id, minor number, memory, CPU affinity (``nvmlDeviceGetCpuAffinity``, NUMA-node scope incl. SMT
siblings), MIG capability, the PCIe common ancestor of each GPU pair and NVLink lanes (remote PCI
bus id per active lane; lanes ending at a non-GPU are NVSwitch lanes). ``live_topology`` combines it
with sysfs; without a driver or library it falls back to sysfs alone and says so through
``on_warning``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from slurm_gpu.adapters.sysfs import SysfsNode, normalise_bus_id, read_sysfs
from slurm_gpu.errors import TopologyError
from slurm_gpu.plain import Record, record
from slurm_gpu.topology.model import Gpu, Link, Nic, Topology, build_topology

# nvmlGpuTopologyLevel_t -> `nvidia-smi topo -m` spelling (INTERNAL = same board: closest PCIe)
TOPOLOGY_LEVELS: dict[int, str] = {0: "PIX", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
CPU_SET_WORDS = 512  # 64-bit words: 32768 cpus, Slurm's MAX_CPUS


@record
class NvmlGpu(Record):
    index: int
    minor: int | None
    pci_bus_id: str
    uuid: str | None
    name: str | None
    memory_mib: int | None
    cpus: tuple[int, ...] | None
    mig_capable: bool
    nvlink_remotes: tuple[str, ...]  # remote PCI bus id of each active lane


@record
class NvmlInventory(Record):
    """GPUs as NVML reports them, in NVML index order, plus the pairwise PCIe relation."""

    gpus: tuple[NvmlGpu, ...]
    pcie: dict[tuple[int, int], str]
    driver_version: str | None = None


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _mask_to_cpus(words: Iterable[int]) -> tuple[int, ...]:
    return tuple(i * 64 + b for i, w in enumerate(words) for b in range(64) if int(w) >> b & 1)


def read_nvml() -> NvmlInventory:
    """Query NVML. Raises the pynvml NVMLError of the first failing call (caller decides)."""
    import pynvml  # lazy: nvidia-ml-py

    pynvml.nvmlInit()
    try:
        driver = None
        try:
            driver = _text(pynvml.nvmlSystemGetDriverVersion())
        except pynvml.NVMLError:
            pass
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        gpus = []
        for i, h in enumerate(handles):
            bus = normalise_bus_id(_text(pynvml.nvmlDeviceGetPciInfo(h).busId))

            def optional(fn: Callable[..., Any], *args: Any, _h: Any = h) -> Any:
                try:
                    return fn(_h, *args)
                except pynvml.NVMLError:
                    return None

            mem = optional(pynvml.nvmlDeviceGetMemoryInfo)
            mask = optional(pynvml.nvmlDeviceGetCpuAffinity, CPU_SET_WORDS)
            mig = optional(pynvml.nvmlDeviceGetMigMode)
            remotes = []
            for lane in range(pynvml.NVML_NVLINK_MAX_LINKS):
                try:
                    if not pynvml.nvmlDeviceGetNvLinkState(h, lane):
                        continue
                    remotes.append(normalise_bus_id(_text(pynvml.nvmlDeviceGetNvLinkRemotePciInfo(h, lane).busId)))
                except pynvml.NVMLError_InvalidArgument:
                    continue  # lane not present (Slurm's gpu_nvml.c does the same)
                except pynvml.NVMLError:
                    break  # NOT_SUPPORTED and friends: no NVLink on this GPU
            cpus = _mask_to_cpus(mask) if mask is not None else None
            gpus.append(
                NvmlGpu(
                    index=i,
                    minor=optional(pynvml.nvmlDeviceGetMinorNumber),
                    pci_bus_id=bus,
                    uuid=_text(optional(pynvml.nvmlDeviceGetUUID) or "") or None,
                    name=_text(optional(pynvml.nvmlDeviceGetName) or "") or None,
                    memory_mib=None if mem is None else int(mem.total) // 2**20,
                    cpus=cpus or None,
                    mig_capable=mig is not None,
                    nvlink_remotes=tuple(remotes),
                )
            )
        pcie = {}
        for i in range(len(handles)):
            for j in range(i + 1, len(handles)):
                try:
                    level = pynvml.nvmlDeviceGetTopologyCommonAncestor(handles[i], handles[j])
                    pcie[(i, j)] = TOPOLOGY_LEVELS.get(int(level), "SYS")
                except pynvml.NVMLError:
                    pass
        return NvmlInventory(tuple(gpus), pcie, driver)
    finally:
        pynvml.nvmlShutdown()


def combine(node: SysfsNode, inv: NvmlInventory | None, notes: list[str]) -> Topology:
    """Pure: sysfs layout + NVML inventory (or sysfs PCI devices alone) -> Topology."""
    by_bus = {d.bus_id: d for d in node.pci}
    gpus: list[Gpu] = []
    links: list[Link] = []
    if inv is not None:
        index_of = {g.pci_bus_id: g.index for g in inv.gpus}
        for g in inv.gpus:
            dev = by_bus.get(g.pci_bus_id)
            gpus.append(
                Gpu(
                    index=g.index,
                    minor=g.minor,
                    pci_bus_id=g.pci_bus_id,
                    uuid=g.uuid,
                    name=g.name,
                    memory_mib=g.memory_mib,
                    numa_node=dev.numa_node if dev else None,
                    cpus=g.cpus if g.cpus is not None else (dev.local_cpus if dev else None),
                    mig_capable=g.mig_capable,
                )
            )
        switch_lanes = {g.index: sum(1 for r in g.nvlink_remotes if r not in index_of) for g in inv.gpus}
        for a in inv.gpus:
            for b in inv.gpus:
                if a.index >= b.index:
                    continue
                direct = sum(1 for r in a.nvlink_remotes if index_of.get(r) == b.index)
                if direct:
                    links.append(Link(f"GPU{a.index}", f"GPU{b.index}", f"NV{direct}"))
                elif switch_lanes[a.index] and switch_lanes[b.index]:
                    n = min(switch_lanes[a.index], switch_lanes[b.index])
                    links.append(Link(f"GPU{a.index}", f"GPU{b.index}", f"NV{n}", switched=True))
                elif (a.index, b.index) in inv.pcie:
                    links.append(Link(f"GPU{a.index}", f"GPU{b.index}", inv.pcie[(a.index, b.index)]))
    else:
        for i, dev in enumerate(node.nvidia_gpus()):
            gpus.append(Gpu(index=i, pci_bus_id=dev.bus_id, numa_node=dev.numa_node, cpus=dev.local_cpus))
        if gpus:
            notes.append("GPU index = PCI bus id order and /dev/nvidia minor = index (sysfs only; NVML knows better)")
    gpus = [_numa_from_cpus(g, node, notes) for g in gpus]
    nics = [
        Nic(index=k, name=(d.net_names[0] if d.net_names else d.bus_id), numa_node=d.numa_node, pci_bus_id=d.bus_id)
        for k, d in enumerate(node.nics())
    ]
    return build_topology(node.threads, node.numa_nodes, gpus, nics, links, memory_mb=node.memory_mb, notes=notes)


def _numa_from_cpus(gpu: Gpu, node: SysfsNode, notes: list[str]) -> Gpu:
    """VMs report ``numa_node`` -1 in sysfs (seen on a 1x H200 KVM guest, driver 580); nvidia-smi
    then still prints the NUMA node whose cpus hold the GPU's affinity. Do the same."""
    if gpu.numa_node is not None or not gpu.cpus:
        return gpu
    holders = [n.id for n in node.numa_nodes if n.cpus and set(gpu.cpus) <= set(n.cpus)]
    if len(holders) != 1:
        return gpu
    notes.append(f"GPU{gpu.index}: sysfs gives no NUMA node; NUMA {holders[0]} from its CPU affinity")
    return replace(gpu, numa_node=holders[0])


def live_topology(root: str = "/", on_warning: Callable[[str], None] | None = None) -> Topology:
    """The running node. NVML problems (no library, no driver) fall back to sysfs with a warning."""
    node = read_sysfs(root)
    notes: list[str] = []
    inv = None
    try:
        import pynvml
    except ImportError:
        msg = "nvidia-ml-py is not installed; GPUs from sysfs only"
    else:
        try:
            inv = read_nvml()
        except pynvml.NVMLError as e:
            msg = f"NVML unavailable ({e}); GPUs from sysfs only (no UUIDs, names, NVLinks)"
        except TopologyError as e:
            msg = f"NVML gave unusable data ({e}); GPUs from sysfs only"
    if inv is None:
        notes.append(msg)
        if on_warning:
            on_warning(msg)
    return combine(node, inv, notes)
