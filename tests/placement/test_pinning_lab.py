# SPDX-License-Identifier: Apache-2.0
"""The pinning helper against the real Slurm lab (marker ``slurm``).

1. Real jobs of 1-8 h100 GPUs (plain sbatch as users write it, and gpusub's socket split): each
   job's allocated cpus and GPUs are read from squeue's JSON (the lab helper; scontrol's CPU_IDs and GRES IDX) and the
   per-worker masks computed with the h100x8 topology are checked against that allocation and the
   lab's gres.conf ``Cores=``.
2. ``slurm-gpu-pin`` really runs inside a job for 2 workers (the lab machine has 2 real cpus): with
   a synthetic topology (GPU i local to cpu i % 2) each worker's actual ``Cpus_allowed_list`` is
   the cpu of its GPU.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from slurm_gpu.cpulist import parse_cpulist
from slurm_gpu.placement.locality import parse_gres_conf
from slurm_gpu.placement.pinning import plan_node_pins
from slurm_gpu.topology.model import Gpu, NumaNode, Thread, build_topology

pytestmark = pytest.mark.slurm

PIN = os.path.join(os.path.dirname(sys.executable), "slurm-gpu-pin")
SHAPES = [
    ["--gres=gpu:h100:1", "-c", "2"],
    ["--gres=gpu:h100:2", "-c", "4"],
    ["--gres=gpu:h100:4", "-c", "8"],
    ["--gres=gpu:h100:8", "--ntasks-per-node=1", "-c", "16"],
    ["--gres=gpu:h100:8", "--ntasks=8", "--cpus-per-task=2", "--ntasks-per-socket=4", "-m", "block:block",
     "--gres-flags=enforce-binding"],
]


def gres_cores(lab) -> dict[str, dict[int, frozenset[int]]]:
    with open(os.path.join(os.path.dirname(lab.slurm_conf), "gres.conf"), encoding="utf-8") as fh:
        return parse_gres_conf(fh.read())


def running_allocation(lab, argv: list[str]):
    work = lab.workdir("pin")
    job = lab.sbatch(["-p", "batch", "-t", "2", "--mem=1G", *argv, "--wrap", "sleep 60"], cwd=work)
    try:
        assert lab.wait(job, {"RUNNING"}, timeout_s=120) == "RUNNING"
        every = lab.show_job(job)[1]  # the lab helper's job reader (squeue's JSON)
    finally:
        lab.cancel(job)
    allocs = [a for a in every if a.gpu_idx]
    assert len(allocs) == 1, every
    return allocs[0]


@pytest.mark.parametrize("argv", SHAPES, ids=[" ".join(s) for s in SHAPES])
def test_worker_masks_split_the_real_allocation(slurm_lab, h100, argv):
    alloc = running_allocation(slurm_lab, argv)
    cores = gres_cores(slurm_lab)[alloc.node]  # h100x8 has one thread per core: core id = cpu id
    gpus = sorted(alloc.gpu_idx)
    node = plan_node_pins(alloc.cpu_ids, h100.gpu_cpus, gpus, len(gpus), cpu_core=h100.cpu_core,
                          cpu_numa=h100.cpu_numa)
    masks = [set(w.cpus) for w in node.workers]
    assert set().union(*masks) == set(alloc.cpu_ids)
    assert sum(map(len, masks)) == len(alloc.cpu_ids), "workers share cpus"
    job_local = set().union(*(cores[g] for g in gpus)) & alloc.cpu_ids
    for w, mask in zip(node.workers, masks, strict=True):
        mine = cores[w.gpu_id] & alloc.cpu_ids
        peers = sum(1 for v in node.workers if cores[v.gpu_id] == cores[w.gpu_id])
        if len(mine) >= peers:  # enough local cores for every worker of this GPU group
            assert mask & mine and mask <= mine | (set(alloc.cpu_ids) - job_local), (w, sorted(alloc.cpu_ids))
            assert not w.warnings
        else:
            assert w.warnings and not mask & mine


def test_slurm_gpu_pin_pins_two_workers_inside_a_job(slurm_lab):
    work = slurm_lab.workdir("pinrun")
    threads = [Thread(c, 0, c, 0) for c in (0, 1)]
    topo = build_topology(threads, [NumaNode(0, (0, 1))], [Gpu(i, numa_node=0, cpus=(i % 2,)) for i in range(8)])
    with open(os.path.join(work, "topo.json"), "w", encoding="utf-8") as fh:
        json.dump(topo.to_json(), fh)
    show = "grep Cpus_allowed_list /proc/self/status | cut -f2; echo $CUDA_VISIBLE_DEVICES"
    script = "\n".join([
        "#!/bin/bash",
        "grep Cpus_allowed_list /proc/self/status | cut -f2 > alloc.txt",
        "echo \"$SLURM_JOB_GPUS\" > gpus.txt",
        "for r in 0 1; do",
        f"  LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 {PIN} --topology topo.json -- sh -c '{show}' > w$r.txt 2> w$r.err &",
        "done",
        "wait",
    ])
    with open(os.path.join(work, "job.sh"), "w", encoding="utf-8") as fh:
        fh.write(script + "\n")
    job = slurm_lab.sbatch(["-p", "batch", "-t", "2", "--mem=1G", "-w", "h100n1", "--gres=gpu:h100:2", "-c", "2",
                            "-o", "out.txt", "job.sh"], cwd=work)
    assert slurm_lab.wait(job, timeout_s=120) == "COMPLETED"

    def read(name: str) -> str:
        with open(os.path.join(work, name), encoding="utf-8") as fh:
            return fh.read().strip()

    assert parse_cpulist(read("alloc.txt")) == (0, 1), "the lab gives a 2-core job both real cpus"
    g = [int(x) for x in read("gpus.txt").split(",")]
    # by hand: worker r drives GPU g[r], local to cpu g[r] % 2; when both GPUs sit on one cpu,
    # worker 1 takes the other cpu (and is warned)
    want = [g[0] % 2, g[1] % 2 if g[1] % 2 != g[0] % 2 else 1 - g[0] % 2]
    for r in (0, 1):
        cpus, cvd = read(f"w{r}.txt").split("\n")
        assert parse_cpulist(cpus) == (want[r],), (r, g, read(f"w{r}.err"))
        assert cvd == read("gpus.txt")
        assert ("warning" in read(f"w{r}.err")) == (r == 1 and g[0] % 2 == g[1] % 2)
