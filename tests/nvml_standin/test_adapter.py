# SPDX-License-Identifier: Apache-2.0
"""The project's NVML adapter (slurm_gpu.adapters.nvml) over the compiled stand-in, in a fresh process
(as a hook started by slurmd would run it): the real binding, the real library loading path."""

from __future__ import annotations

READ = """
from slurm_gpu.adapters.nvml import read_nvml
inv = read_nvml()
out(dict(driver=inv.driver_version, pcie={f"{a}-{b}": v for (a, b), v in inv.pcie.items()},
         gpus=[[g.index, g.minor, g.pci_bus_id, g.uuid, g.name, g.memory_mib, g.cpus and list(g.cpus), g.mig_capable,
                list(g.nvlink_remotes)] for g in inv.gpus]))
"""

H100_BUSES = ["53", "64", "75", "86", "97", "a8", "b9", "ca"]


def test_read_nvml_over_the_h100_recording(node):
    got = node("h100-8gpu").run(READ)
    assert got["driver"] == "580.105.08"
    assert got["pcie"] == {}  # nvmlDeviceGetTopologyCommonAncestor is not served: FunctionNotFound, skipped
    assert got["gpus"] == [
        [
            i,
            i,
            f"0000:{bus}:00.0",
            f"GPU-0000000{i}-0000-0000-0000-00000000000{i}",
            "NVIDIA H100 80GB HBM3",
            81559,
            None,
            True,
            [],
        ]  # no recorded CPU affinity; NvLink calls not served -> no lanes
        for i, bus in enumerate(H100_BUSES)
    ]


def test_read_nvml_reads_cpu_affinity_words(node):
    def edit(data):  # the DGX H100/H200 NUMA split of the saved topo -m (0-55,112-167 | 56-111,168-223)
        for i, g in enumerate(data["gpus"]):
            g["cpus"] = "0-55,112-167" if i < 4 else "56-111,168-223"

    gpus = node("h100-8gpu", edit=edit).run(READ)["gpus"]
    assert gpus[0][6] == [*range(0, 56), *range(112, 168)]
    assert gpus[7][6] == [*range(56, 112), *range(168, 224)]


def test_read_nvml_raises_the_drivers_error(node):
    code = """
from slurm_gpu.adapters.nvml import read_nvml
try:
    read_nvml()
except N.NVMLError as e:
    out(type(e).__name__)
"""
    n = node("h100-8gpu")
    assert n.run(code, SLURM_GPU_NVML_STANDIN_FAIL="driver_not_loaded") == "NVMLError_DriverNotLoaded"
    lost = node("h100-8gpu", edit=lambda d: d["gpus"][2].update(lost=1))
    assert lost.run(code) == "NVMLError_GpuIsLost"
