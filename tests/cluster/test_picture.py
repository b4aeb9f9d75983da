# SPDX-License-Identifier: Apache-2.0
"""The terminal picture at 3 sizes against golden files (tests/golden/cluster/*.txt): the lab capture
(3 nodes), 16 nodes x 8 GPUs (one row per node, cells per socket) and 500 nodes (summarised). A changed
picture FAILS; the files are (re)written only with SLURM_GPU_UPDATE_GOLDEN=1, and the diff is reviewed."""

from __future__ import annotations

import difflib
import importlib.util
import os
import sys
from pathlib import Path

import pytest

from slurm_gpu.cluster.view import from_texts, picture

_spec = importlib.util.spec_from_file_location("cluster_records", Path(__file__).with_name("cluster_records.py"))
R = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("cluster_records", R)
_spec.loader.exec_module(R)

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "cluster"
UPDATE = os.environ.get("SLURM_GPU_UPDATE_GOLDEN") == "1"
GRES_CONF = "NodeName=n[01-16] Name=gpu Type=h100 File=/dev/nvidia[0-3] Cores=0-15\n" \
            "NodeName=n[01-16] Name=gpu Type=h100 File=/dev/nvidia[4-7] Cores=16-31\n"
USERS = ["ann", "bob", "cat", "dan"]


def sixteen() -> tuple[str, str]:
    nodes, jobs = [], []
    for i in range(1, 17):
        name = f"n{i:02d}"
        if i == 5:
            nodes.append(R.node_line(name, state="IDLE+DRAIN", reason="nvidia-smi fails [root@2026-12-01T00:00:00]"))
            continue
        if i == 9:
            nodes.append(R.node_line(name, state="DOWN*"))
            continue
        held = list(range(i % 9))  # 0..8 GPUs in use
        if held:
            gres = f"gpu:h100:{len(held)}(IDX:{held[0]}-{held[-1]})"
            jobs.append(R.job_line(100 + i, USERS[i % 4], "RUNNING", name, gres, f"TresPerNode={gres.split('(')[0]}"))
            used = f"gpu:h100:{len(held)}(IDX:{held[0]}-{held[-1]})"
        else:
            used = "gpu:h100:0(IDX:N/A)"
        nodes.append(R.node_line(name, state="MIXED" if held else "IDLE", used=used, cpu_alloc=4 * len(held),
                                 mem_alloc=61440 * len(held)))
    return "\n".join(nodes), R.jobs_json(*jobs)


def five_hundred() -> str:
    nodes = []
    for i in range(1, 501):
        state, used = "IDLE", 0
        if i % 50 == 0:
            state = "IDLE+DRAIN"
        elif i % 7 == 0:
            state = "IDLE+POWERED_DOWN"
        else:
            used = (i * 3) % 9
            state = "ALLOCATED" if used == 8 else ("MIXED" if used else "IDLE")
        u = f"gpu:h100:{used}(IDX:0-{used - 1})" if used else "gpu:h100:0(IDX:N/A)"
        nodes.append(R.node_line(f"gpu{i:04d}", state=state, used=u, cpu_alloc=4 * used, mem_alloc=61440 * used))
    return "\n".join(nodes)


PARTS = "PartitionName=batch Nodes=ALL JobDefaults=DefCpuPerGPU=4,DefMemPerGPU=61440 State=UP"


def pictures() -> dict[str, str]:
    lab = R.lab_texts("22.05")
    n16, j16 = sixteen()
    return {
        "lab-3-nodes.txt": picture(from_texts(lab["nodes.txt"], lab["jobs.json"], lab["partitions.txt"],
                                              lab["gres.conf"])),
        "16-nodes-x-8-gpus.txt": picture(from_texts(n16, j16, PARTS, GRES_CONF)),
        "500-nodes.txt": picture(from_texts(five_hundred(), "", PARTS)),
    }


@pytest.mark.parametrize("name", sorted(pictures()))
def test_golden(name):
    text = pictures()[name]
    path = GOLDEN / name
    if UPDATE:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if not path.exists():
        pytest.fail(f"golden file {path} is missing; create it with SLURM_GPU_UPDATE_GOLDEN=1 and review it")
    want = path.read_text(encoding="utf-8")
    if text != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True), str(path), "rendered"))
        pytest.fail(f"picture differs from {path} (SLURM_GPU_UPDATE_GOLDEN=1 rewrites it):\n{diff}")


def test_sixteen_nodes_cells_by_hand():
    n16, j16 = sixteen()
    text = picture(from_texts(n16, j16, PARTS, GRES_CONF))
    rows = {line.split()[0]: line for line in text.splitlines() if line.startswith("n")}
    assert len(rows) == 16
    # n03 holds GPUs 0-2 (bob: 3 % 4 = 3 -> dan); n08 GPUs 0-7 across both sockets; n05 drained: all x
    assert "h100 [xxxx|xxxx]" in rows["n05"] and "DRAIN (nvidia-smi fails)" in rows["n05"]
    assert "h100 [xxxx|xxxx]" in rows["n09"]
    cells = rows["n08"].split("[", 1)[1].split("]", 1)[0]
    assert cells[:4] == cells[5:9] and cells[4] == "|" and "." not in cells  # 8 busy by one user
    cells3 = rows["n03"].split("[", 1)[1].split("]", 1)[0]
    assert cells3[3:] == ".|...." and len(set(cells3[:3])) == 1


def test_five_hundred_is_summarised_and_full_is_not():
    view = from_texts(five_hundred(), "", PARTS)
    short = picture(view)
    assert "500 GPU nodes, summarised" in short and len(short.splitlines()) < 40
    assert len(picture(view, max_rows=10_000).splitlines()) > 500


def test_a_gpu_that_shard_jobs_use_is_not_drawn_free():
    """Slurm gives a GPU with shards in use to no whole-GPU job (docs/cluster.md, "Shards"): the picture
    shows it as the shard job's, beside a whole GPU another user holds, and the other 6 free."""
    node = R.node_line("s01", state="MIXED", gres="gpu:h100:8(S:0-1),shard:h100:32(S:0-1)",
                       used="gpu:h100:1(IDX:5),shard:h100:3(IDX:0)", cpu_alloc=8, mem_alloc=122880)
    jobs = R.jobs_json(R.job_line(201, "ann", "RUNNING", "s01", "shard:h100:3(IDX:0)", "TresPerNode=gres:shard:3"),
                       R.job_line(202, "bob", "RUNNING", "s01", "gpu:h100:1(IDX:5)", "TresPerNode=gres:gpu:1"))
    text = picture(from_texts(node, jobs, PARTS, GRES_CONF.replace("n[01-16]", "s01")))
    row = next(line for line in text.splitlines() if line.startswith("s01"))
    cells = row.split("[", 1)[1].split("]", 1)[0].replace("|", "")
    assert len(cells) == 8 and cells[0] not in ". " and cells[5] not in ". " and cells[0] != cells[5]
    assert cells[1:5] + cells[6:] == "......"
