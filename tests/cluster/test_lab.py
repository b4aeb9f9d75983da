# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu cluster --json`` in the real lab with jobs holding known GPUs, checked by hand.

Four jobs as the lab user: h100:3 and h100:2 with -c 20 on h100n1 (12 + 20 = all 32 CPUs: its 3 free
GPUs are stranded), h100:1 on h100n2 and a100:1 with --mem=400G on a100n1 (100 GiB left, one
DefMemPerGPU of 60 GiB: 2 of its 3 free GPUs stranded). The lab is shared: the exact figures need
the GPU nodes to hold no other job, so the test waits for that first (and skips, saying so, if
other work keeps them busy for 3 minutes)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

JOBS = [["--gpus=h100:3", "-w", "h100n1"], ["--gpus=h100:2", "-c", "20", "-w", "h100n1"],
        ["--gpus=h100:1", "-w", "h100n2"], ["--gpus=a100:1", "--mem=400G", "-w", "a100n1"]]


def _gres_used(lab) -> dict[str, str]:
    out = lab.run(["sinfo", "-h", "-N", "-O", "NodeList:20,GresUsed:60"], as_root=True, check=True).stdout
    return dict(line.split(None, 1) for line in out.splitlines() if line.strip())


def _quiet(lab, deadline_s: float = 180) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        used = _gres_used(lab)
        if used and all(":0(" in v for v in used.values()):
            return True
        time.sleep(2)
    return False


def _cluster_json(lab) -> dict:
    p = subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", "cluster", "--json"], capture_output=True,
                       text=True, timeout=60, env=lab.env() | {"PATH": "/usr/bin:/bin"}, check=False)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.slurm
def test_known_gpus_by_hand(slurm_lab):
    lab = slurm_lab
    if not _quiet(lab):
        pytest.skip("the shared lab's GPU nodes stayed busy with other jobs for 3 minutes")
    wd = lab.workdir("cluster")
    ids = []
    try:
        for extra in JOBS:
            ids.append(lab.sbatch(["-p", "batch", "-t", "10", *extra, "-o", "/dev/null", "--wrap", "sleep 300"],
                                  cwd=wd))
        for j in ids:
            assert lab.wait(j, {"RUNNING"}, timeout_s=60) == "RUNNING"
        used = _gres_used(lab)
        if sum(int(v.split(":")[2].split("(")[0]) for v in used.values()) != 7:
            pytest.skip(f"another job started on the GPU nodes meanwhile: {used}")
        doc = _cluster_json(lab)
        h, a = doc["types"]["h100"], doc["types"]["a100"]
        assert (h["total"], h["allocated"], h["free"], h["unavailable"]) == (16, 6, 10, 0)
        assert h["stranded"] == 3 and h["largest_startable"] == {"one_node": 7, "any_nodes": 7}
        assert h["fragmentation"] == {"1": 0.0, "2": 0.0, "3": 0.0, "4": 0.3, "5": 0.3, "6": 0.3, "7": 0.3,
                                      "8": 1.0}
        assert (a["total"], a["allocated"], a["free"], a["stranded"]) == (4, 1, 3, 2)
        assert a["largest_startable"] == {"one_node": 1, "any_nodes": 1}
        assert a["fragmentation"] == {"1": 0.0, "2": 0.0, "3": 0.0, "4": 1.0}
        p = subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", "cluster"], capture_output=True, text=True,
                           timeout=60, env=lab.env() | {"PATH": "/usr/bin:/bin"}, check=False)
        assert p.returncode == 0 and "h100n1" in p.stdout and f"{lab.user} (7 GPUs; jobs" in p.stdout
    finally:
        lab.cancel(*ids)
