# SPDX-License-Identifier: Apache-2.0
"""Per-worker CPU masks from real lab allocations: slurm-gpu-pin vs ``torchrun --numa-binding=node``.

For each job shape (1, 2, 4, 8 GPUs as users write them with plain sbatch, and gpusub's socket
split) a job is submitted to the running lab, its allocation is read (squeue's JSON, the one job reader)
(CPU_IDs, GRES IDX) while it runs, and the masks of one worker per GPU are computed two ways:

- ours: ``slurm_gpu.placement.pinning.plan_node_pins`` on the node type's topology;
- torchrun ``--numa-binding=node`` (PyTorch ``torch/numa/binding.py``): worker r is bound to the
  cpus of the NUMA node of ``cuda:r`` intersected with the launcher's affinity, which inside the
  job is the allocation; an empty set makes the binding raise (the worker does not start).

and torchrun ``--numa-binding=exclusive``: the allowed cores of that NUMA node split evenly among
the visible GPUs on it (fewer cores than GPUs raises).

Printed per shape and way: allocated cpus outside every worker's mask (idle) / cpus in two or more
masks (shared) / the most workers on one cpu / cpus of masks outside the allocation / workers left
without a mask (torch: the binding raises) or pinned to remote cpus only (ours, warned).

Usage (lab up, as root):  .venv/bin/python benchmarks/bench_pinning.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from slurm_gpu.cpulist import format_cpulist  # noqa: E402
from slurm_gpu.lab.clients import show_job  # noqa: E402
from slurm_gpu.lab.control import lab_client_env  # noqa: E402
from slurm_gpu.placement.pinning import locality_from_topology, plan_node_pins  # noqa: E402
from slurm_gpu.topology.loader import load_topology_file  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPLIT = ["--ntasks-per-socket=4", "-m", "block:block", "--gres-flags=enforce-binding"]
SHAPES = [
    ("h100", "h100 x1 -c 2", ["--gres=gpu:h100:1", "-c", "2"]),
    ("h100", "h100 x1 -c 20", ["--gres=gpu:h100:1", "-c", "20"]),
    ("h100", "h100 x2 -c 4", ["--gres=gpu:h100:2", "-c", "4"]),
    ("h100", "h100 x2 -c 20", ["--gres=gpu:h100:2", "-c", "20"]),
    ("h100", "h100 x4 -c 8", ["--gres=gpu:h100:4", "-c", "8"]),
    ("h100", "h100 x8 -c 16", ["--gres=gpu:h100:8", "--ntasks-per-node=1", "-c", "16"]),
    ("h100", "h100 x8 8 tasks x 2 split", ["--gres=gpu:h100:8", "--ntasks=8", "--cpus-per-task=2", *SPLIT]),
    ("a100", "a100 x2 -c 8", ["--gres=gpu:a100:2", "-c", "8"]),
    ("a100", "a100 x4 -c 16", ["--gres=gpu:a100:4", "-c", "16"]),
]


def lab_env() -> dict[str, str]:
    env = lab_client_env()
    return env


def allocation(argv: list[str], env: dict[str, str], work: str):
    out = subprocess.run(["sbatch", "--parsable", "-p", "batch", "-t", "2", "--mem=1G", *argv, "--wrap", "sleep 60"],
                         capture_output=True, text=True, env=env, cwd=work, timeout=30, check=True).stdout
    job = out.strip().split(";")[0]
    try:
        for _ in range(240):
            state = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True, env=env,
                                   timeout=10).stdout.strip()
            if state == "RUNNING":
                break
            time.sleep(0.5)
        else:
            raise RuntimeError(f"job {job} did not start")
        allocs = show_job(env["SLURM_CONF"], job)[1]  # the one job reader: squeue's JSON
    finally:
        subprocess.run(["scancel", job], env=env, timeout=10)
    return next(a for a in allocs if a.gpu_idx)


def torch_node_masks(topo, alloc: frozenset[int], gpus: list[int]) -> list[set[int] | None]:
    """torch --numa-binding=node: NUMA node of cuda:r, intersected with the allowed cpus."""
    out: list[set[int] | None] = []
    for g in gpus:
        numa = topo.gpu(g).numa_node
        cpus = next(set(n.cpus) for n in topo.numa_nodes if n.id == numa) & alloc
        out.append(cpus or None)  # empty: "Must bind to a non-empty set of CPU indices"
    return out


def torch_exclusive_masks(topo, alloc: frozenset[int], gpus: list[int]) -> list[set[int] | None]:
    """torch --numa-binding=exclusive: the allowed cores of the NUMA node of cuda:r split evenly (in
    core order, extras to the lowest) among the visible GPUs on that node; too few cores raises."""
    out: list[set[int] | None] = []
    for g in gpus:
        numa = topo.gpu(g).numa_node
        peers = sorted(i for i, h in enumerate(gpus) if topo.gpu(h).numa_node == numa)
        cpus = next(set(n.cpus) for n in topo.numa_nodes if n.id == numa) & alloc
        cores: dict[int, set[int]] = {}
        for c in sorted(cpus):
            cores.setdefault(min(topo.core_cpus(next(x.core for x in topo.cpus if x.os_id == c))), set()).add(c)
        per, extra = divmod(len(cores), len(peers))
        if per < 1:
            out.append(None)
            continue
        k = peers.index(gpus.index(g))
        start = k * per + min(k, extra)
        chosen = list(cores.values())[start:start + per + (1 if k < extra else 0)]
        out.append(set().union(*chosen))
    return out


def measure(masks: list[set[int] | None], alloc: frozenset[int]) -> tuple[int, int, int, int, int]:
    used = [m for m in masks if m]
    count: dict[int, int] = {}
    for m in used:
        for c in m:
            count[c] = count.get(c, 0) + 1
    idle = len(alloc - set(count))
    shared = sum(1 for n in count.values() if n > 1)
    outside = len(set(count) - alloc)
    return idle, shared, max(count.values(), default=0), outside, sum(1 for m in masks if not m)


def main() -> int:
    env = lab_env()
    topos = {t: load_topology_file(os.path.join(ROOT, "examples", "topology", f"{t}x{n}.yaml"))
             for t, n in (("h100", 8), ("a100", 4))}
    work = tempfile.mkdtemp(prefix="bench-pin-")
    os.chmod(work, 0o777)
    print("| job | CPU_IDs | GPUs | torch node | torch exclusive | slurm-gpu-pin |")
    print("|---|---|---|---|---|---|")
    for kind, label, argv in SHAPES:
        a = allocation(argv, env, work)
        topo = topos[kind]
        loc = locality_from_topology(topo)
        gpus = sorted(a.gpu_idx)
        torch = measure(torch_node_masks(topo, a.cpu_ids, gpus), a.cpu_ids)
        excl = measure(torch_exclusive_masks(topo, a.cpu_ids, gpus), a.cpu_ids)
        node = plan_node_pins(a.cpu_ids, loc.gpu_cpus, gpus, len(gpus), cpu_core=loc.cpu_core, cpu_numa=loc.cpu_numa)
        ours = measure([set(w.cpus) for w in node.workers], a.cpu_ids)
        warned = sum(1 for w in node.workers if w.warnings)
        print(f"| {label} | {format_cpulist(a.cpu_ids)} | {format_cpulist(gpus)} | "
              f"{' / '.join(map(str, torch))} | {' / '.join(map(str, excl))} | "
              f"{' / '.join(map(str, ours[:4]))} / {warned} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
