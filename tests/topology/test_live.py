# SPDX-License-Identifier: Apache-2.0
"""The live-node path: sysfs (a recorded tree in tmp_path) + NVML through the real nvidia-ml-py with a
stand-in libnvidia-ml serving a recorded machine (the NVIDIA DGX-2H of data/, whose hwloc XML was
itself produced from NVML: GPU bus ids, UUIDs, names, NVLink lanes to NVSwitches).

Expected values are the DGX-2H facts: 16 V100, GPUs 0-7 on package/NUMA 0, 8-15 on 1, every NVLink
lane ends at an NVSwitch (so Slurm's Links= is 0 for every pair)."""

from __future__ import annotations

import importlib.util
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from slurm_gpu.adapters.nvml import NvmlInventory, live_topology, read_nvml
from slurm_gpu.adapters.sysfs import normalise_bus_id, read_sysfs
from slurm_gpu.topology.hwloc import topology_from_hwloc
from slurm_gpu.topology.slurmconf import gres_conf_lines

_here = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("nvml_standin", _here / "nvml_standin.py")
standin = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("nvml_standin", standin)
_spec.loader.exec_module(standin)

DGX2_XML = (_here / "data" / "nvidia-dgx2h-16xV100-nvswitch.hwloc.xml").read_text()


def recorded_dgx2():
    """Pull the recorded NVML answers out of the hwloc XML with plain ElementTree (not our parser)."""
    root = ET.fromstring(DGX2_XML)
    parent = {c: p for p in root.iter("object") for c in p.findall("object")}
    gpus, switch_bus, owner_pkg = {}, {}, {}
    for o in root.iter("object"):
        if o.get("type") == "OSDev" and re.fullmatch(r"nvml\d+", o.get("name", "")):
            pci = parent[o]
            info = {i.get("name"): i.get("value") for i in o.findall("info")}
            gpus[o.get("gp_index")] = (int(o.get("name")[4:]), pci.get("pci_busid"), info)
            p = pci
            while p.get("type") != "Package":
                p = parent[p]
            owner_pkg[o.get("gp_index")] = p
        if o.get("subtype") == "NVSwitch":
            switch_bus[o.get("gp_index")] = o.get("pci_busid")
    dist = next(d for d in root.iter("distances2hetero") if d.get("name") == "NVLinkBandwidth")
    idx = " ".join(i.text for i in dist.findall("indexes")).split()
    vals = [int(v) for v in " ".join(v.text for v in dist.findall("u64values")).split()]
    n = len(idx)
    out = []
    for row, key in enumerate(idx):
        typ, gp = key.split(":")
        if typ != "OSDev" or gp not in gpus:
            continue
        index, bus, info = gpus[gp]
        remotes = []
        for col, other in enumerate(idx):
            bw = vals[row * n + col]
            if bw and other.split(":")[1] in switch_bus:
                remotes += [switch_bus[other.split(":")[1]]] * (bw // 25000)  # 25 GB/s per NVLink 2 lane
        cpuset = int(owner_pkg[gp].get("cpuset").replace(",", ""), 16)
        out.append(
            standin.RecordedGpu(
                bus_id="0000" + bus,  # NVML prints an 8-digit domain
                uuid=info["NVIDIAUUID"],
                name=info["GPUModel"],
                minor=index,
                memory_bytes=32 * 2**30,
                cpu_words=[cpuset],
                nvlink_remote_bus_ids=["0000" + r for r in remotes],
                nvlink_lanes=6,
            )
        )
    return standin.RecordedMachine(sorted(out, key=lambda g: g.minor))


def write_sysfs(root: Path, machine) -> None:
    """A sysfs/procfs tree of the same machine: 2 packages, PUs 0-1 and 24-25, NUMA 0 and 1."""
    cpu = root / "sys/devices/system/cpu"
    cpu.mkdir(parents=True)
    (cpu / "online").write_text("0-1,24-25\n")
    for c, (pkg, core) in {0: (0, 0), 1: (0, 1), 24: (1, 0), 25: (1, 1)}.items():
        t = cpu / f"cpu{c}" / "topology"
        t.mkdir(parents=True)
        (t / "physical_package_id").write_text(f"{pkg}\n")
        (t / "core_id").write_text(f"{core}\n")
    for node, cpus in ((0, "0-1"), (1, "24-25")):
        d = root / f"sys/devices/system/node/node{node}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpus + "\n")
        (d / "meminfo").write_text(f"Node {node} MemTotal:       791244484 kB\n")
    (root / "proc").mkdir()
    (root / "proc/meminfo").write_text("MemTotal:       1582488968 kB\n")
    for g in machine.gpus:
        d = root / "sys/bus/pci/devices" / normalise_bus_id(g.bus_id)
        d.mkdir(parents=True)
        node = 0 if g.minor < 8 else 1
        (d / "vendor").write_text("0x10de\n")
        (d / "class").write_text("0x030200\n")
        (d / "numa_node").write_text(f"{node}\n")
        (d / "local_cpulist").write_text("0-1\n" if node == 0 else "24-25\n")


@pytest.fixture
def dgx2(tmp_path):
    machine = recorded_dgx2()
    write_sysfs(tmp_path, machine)
    yield machine, tmp_path
    standin.uninstall()


def test_recorded_machine_is_the_dgx2(dgx2):
    machine, _ = dgx2
    assert len(machine.gpus) == 16
    assert all(len(g.nvlink_remote_bus_ids) == 6 for g in machine.gpus)  # 6 NVLinks per V100


def test_read_nvml_through_real_pynvml(dgx2):
    machine, _ = dgx2
    standin.install(machine)
    inv = read_nvml()
    assert isinstance(inv, NvmlInventory) and inv.driver_version == "450.51.06"
    g0 = inv.gpus[0]
    assert g0.pci_bus_id == "0000:34:00.0" and g0.minor == 0
    assert g0.uuid == "GPU-d3977428-7a30-086b-2e20-5c1eeed647c6" and g0.name == "Tesla V100-SXM3-32GB-H"
    assert g0.memory_mib == 32768 and g0.cpus == (0, 1) and g0.mig_capable is False
    assert inv.gpus[15].cpus == (24, 25)
    assert len(g0.nvlink_remotes) == 6
    assert inv.pcie == {}  # nvmlDeviceGetTopologyCommonAncestor not served -> FunctionNotFound, skipped
    assert "nvmlDeviceGetPciInfo_v3" in machine.calls and "nvmlDeviceGetNvLinkRemotePciInfo_v2" in machine.calls


def test_live_topology_with_nvml(dgx2):
    machine, root = dgx2
    standin.install(machine)
    warnings: list[str] = []
    topo = live_topology(str(root), on_warning=warnings.append)
    assert warnings == []
    assert len(topo.gpus) == 16
    assert [g.numa_node for g in topo.gpus] == [0] * 8 + [1] * 8
    assert topo.link("GPU0", "GPU9") == "NV6"
    assert all(lk.switched for lk in topo.links if lk.a.startswith("GPU") and lk.b.startswith("GPU"))
    assert gres_conf_lines(topo, "dgx2", "v100", links=True)[8] == (
        "NodeName=dgx2 Name=gpu Type=v100 File=/dev/nvidia8 Cores=2-3 Links=" + ",".join(["0"] * 8 + ["-1"] + ["0"] * 7)
    )
    # the same machine from its hwloc XML gives the same GPU -> core table
    from_xml = topology_from_hwloc(DGX2_XML)
    assert [topo.gpu_cores(i) for i in range(16)] == [from_xml.gpu_cores(i) for i in range(16)]
    assert [g.uuid for g in topo.gpus] == [g.uuid for g in from_xml.gpus]
    assert (topo.sockets, topo.cores_per_socket, topo.threads_per_core, topo.memory_mb) == (2, 2, 1, 1545399)


def test_mig_capable_gpu(dgx2):
    machine, root = dgx2
    machine.gpus[3].mig = (0, 0)
    standin.install(machine)
    topo = live_topology(str(root))
    assert [g.mig_capable for g in topo.gpus[:5]] == [False, False, False, True, False]


def _real_nvml_present() -> bool:
    import ctypes

    try:
        ctypes.CDLL("libnvidia-ml.so.1")
        return True
    except OSError:
        return False


@pytest.mark.skipif(_real_nvml_present(), reason="a real libnvidia-ml.so.1 is installed here")
def test_no_library_falls_back_to_sysfs_with_warning(dgx2):
    machine, root = dgx2
    standin.install(None)  # no libnvidia-ml.so.1 on this machine: real NVMLError_LibraryNotFound
    warnings: list[str] = []
    topo = live_topology(str(root), on_warning=warnings.append)
    assert len(warnings) == 1 and "NVML Shared Library Not Found" in warnings[0]
    assert [g.pci_bus_id for g in topo.gpus][:2] == ["0000:34:00.0", "0000:36:00.0"]
    assert [g.numa_node for g in topo.gpus] == [0] * 8 + [1] * 8
    assert topo.gpu_cores(15) == (2, 3)
    assert topo.gpus[0].uuid is None and topo.links == ()


def test_driver_not_loaded_falls_back(dgx2):
    machine, root = dgx2
    machine.init_error = standin.DRIVER_NOT_LOADED
    standin.install(machine)
    warnings: list[str] = []
    topo = live_topology(str(root), on_warning=warnings.append)
    assert len(topo.gpus) == 16 and "NVML unavailable" in warnings[0]


def test_read_sysfs_of_this_machine():
    node = read_sysfs("/")
    assert node.threads and all(t.os_id >= 0 for t in node.threads)


# --- a real 1x H200 VM (captured by the project's device check: data/h200-1gpu-vm.*) ----------


def recorded_h200_vm():
    """From data/h200-1gpu-vm.nvidia-smi-q.xml (`nvidia-smi -q -x`) and its `topo -m` (CPU Affinity 0-15)."""
    root = ET.parse(_here / "data" / "h200-1gpu-vm.nvidia-smi-q.xml").getroot()
    gpu = root.find("gpu")
    total_mib = int(gpu.find("fb_memory_usage/total").text.split()[0])
    return standin.RecordedMachine(
        [
            standin.RecordedGpu(
                bus_id=gpu.find("pci/pci_bus_id").text,
                uuid=gpu.find("uuid").text,
                name=gpu.find("product_name").text,
                minor=int(gpu.find("minor_number").text),
                memory_bytes=total_mib * 2**20,
                cpu_words=[0xFFFF],  # topo -m CPU Affinity 0-15
                nvlink_remote_bus_ids=[],
                nvlink_lanes=0,  # -> NOT_SUPPORTED on lane 0
                mig=(0, 0) if gpu.find("mig_mode/current_mig").text == "Disabled" else (1, 1),
            )
        ],
        driver_version=root.find("driver_version").text,
    )


def test_live_h200_vm_numa_from_affinity(tmp_path):
    machine = recorded_h200_vm()
    # sysfs as the VM showed it: one NUMA node 0-15, the GPU's numa_node is -1
    cpu = tmp_path / "sys/devices/system/cpu"
    cpu.mkdir(parents=True)
    (cpu / "online").write_text("0-15\n")
    for c in range(16):
        (cpu / f"cpu{c}/topology").mkdir(parents=True)
        (cpu / f"cpu{c}/topology/physical_package_id").write_text("0\n")
        (cpu / f"cpu{c}/topology/core_id").write_text(f"{c}\n")
    (tmp_path / "sys/devices/system/node/node0").mkdir(parents=True)
    (tmp_path / "sys/devices/system/node/node0/cpulist").write_text("0-15\n")
    dev = tmp_path / "sys/bus/pci/devices/0000:00:06.0"
    dev.mkdir(parents=True)
    for name, value in (("vendor", "0x10de"), ("class", "0x030200"), ("numa_node", "-1"), ("local_cpulist", "0-15")):
        (dev / name).write_text(value + "\n")
    standin.install(machine)
    try:
        topo = live_topology(str(tmp_path))
    finally:
        standin.uninstall()
    (g,) = topo.gpus
    assert (g.name, g.uuid, g.pci_bus_id, g.minor) == (
        "NVIDIA H200",
        "GPU-1516ee65-a270-e62c-6570-a3f53e8f4864",
        "0000:00:06.0",
        0,
    )
    assert g.memory_mib == 143771 and g.mig_capable
    assert g.numa_node == 0  # as nvidia-smi topo -m printed on that VM (NUMA Affinity 0)
    assert gres_conf_lines(topo, "h200vm", "h200") == [
        "NodeName=h200vm Name=gpu Type=h200 File=/dev/nvidia0 Cores=0-15"
    ]
