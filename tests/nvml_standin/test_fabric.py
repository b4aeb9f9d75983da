# SPDX-License-Identifier: Apache-2.0
"""nvmlDeviceGetGpuFabricInfo over the stand-in: the real nvidia-ml-py reads each GPU's clusterUuid,
cliqueId and state from the recorded GB200 NVL72-like layout (tests/topology/fixtures/fabric/
nvml-fabric-gb200-2rack.json), and the blocks built from what NVML answered are the recorded racks."""

from __future__ import annotations

import json
from pathlib import Path

from slurm_gpu.topology.fabric import blocks_from_fabric_info

LAYOUT = json.loads((Path(__file__).resolve().parents[1] / "topology" / "fixtures" / "fabric" /
                     "nvml-fabric-gb200-2rack.json").read_text())["nodes"]

READ = """
import ctypes, uuid
N.nvmlInit()
rows = []
for i in range(N.nvmlDeviceGetCount()):
    h = N.nvmlDeviceGetHandleByIndex(i)
    info = N.c_nvmlGpuFabricInfo_t()
    try:
        N.nvmlDeviceGetGpuFabricInfo(h, ctypes.byref(info))
    except N.NVMLError as e:
        rows.append({"index": i, "error": str(e)})
        continue
    rows.append({"index": i, "cluster_uuid": str(uuid.UUID(bytes=bytes(info.clusterUuid))),
                 "clique_id": info.cliqueId, "state": info.state, "status": info.status})
N.nvmlShutdown()
out(rows)
"""


def _recorded(node: str) -> list[dict[str, object]]:
    return next(r["gpus"] for r in LAYOUT if r["node"] == node)


def test_fabric_info_is_served_from_the_recording(node) -> None:
    got = {}
    for name in ("gb200-r1n01", "gb200-r2n18"):
        gpus = _recorded(name)

        def edit(d: dict, gpus: list = gpus) -> None:
            d["gpus"] = d["gpus"][:4]
            for g, rec in zip(d["gpus"], gpus, strict=True):
                g["fabric"] = {k: rec[k] for k in ("cluster_uuid", "clique_id", "state")}

        rows = node("h100-8gpu", edit=edit).run(READ)
        assert [(r["cluster_uuid"], r["clique_id"], r["state"]) for r in rows] == [
            (g["cluster_uuid"], g["clique_id"], g["state"]) for g in gpus]
        got[name] = rows
    blocks, warnings = blocks_from_fabric_info([{"node": n, "gpus": rows} for n, rows in got.items()])
    assert [b.nodes for b in blocks] == [("gb200-r1n01",), ("gb200-r2n18",)]
    assert blocks[0].cluster_uuid == LAYOUT[0]["gpus"][0]["cluster_uuid"]
    assert warnings == ("gb200-r2n18: GPU 3 fabric state 2 (not completed): not counted",)


def test_a_gpu_without_fabric_info_is_not_supported(node) -> None:
    rows = node("h100-8gpu").run(READ)  # an H100 PCIe/HGX board records none
    assert all(r.get("error") == "Not Supported" for r in rows), rows
