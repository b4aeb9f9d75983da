# SPDX-License-Identifier: Apache-2.0
"""The locality rule, checked from what the scheduler reports. Pure (records in, verdict out).

For each node of a job (its allocation as :func:`slurm_gpu.slurm.records.read_jobs` reads it: the node's
CPU ids and GPU indices, scontrol's ``Nodes=X CPU_IDs=... GRES=gpu:T:N(IDX:...)``), against that node's
gres.conf ``Cores=``:

1. every allocated GPU has its share of the job's cores among the cores local to it: for each
   group of allocated GPUs with the same local cores, the job holds at least
   ``cpus_per_gpu x (GPUs in the group)`` of those cores;
2. no allocated core is remote to all of the job's GPUs on that node.
"""

from __future__ import annotations

from collections.abc import Sequence

from slurm_gpu.cpulist import parse_cpulist
from slurm_gpu.digits import ascii_int
from slurm_gpu.hostlist import expand_hostlist
from slurm_gpu.slurm.records import NodeAlloc


def _cpuset(text: str) -> frozenset[int]:
    return frozenset(parse_cpulist(text)) if text else frozenset()


def parse_gres_conf(text: str) -> dict[str, dict[int, frozenset[int]]]:
    """gres.conf -> node -> GPU index -> local cores. Indices follow the order of File= lines per node,
    as slurmd numbers them (File=/dev/nvidia[0-3] gives indices 0-3 in this lab)."""
    out: dict[str, dict[int, frozenset[int]]] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or "Name=gpu" not in line:
            continue
        fields = dict(word.split("=", 1) for word in line.split() if "=" in word)
        nodes = expand_hostlist(fields.get("NodeName", "")) if fields.get("NodeName") else ["*"]
        files = expand_hostlist(fields.get("File", "")) if fields.get("File") else []
        count = len(files) or (ascii_int(fields.get("Count", "1"), 1 << 16) or 0)  # ASCII digits, bounded
        cores = _cpuset(fields.get("Cores", ""))
        for node in nodes:
            table = out.setdefault(node, {})
            start = len(table)
            for i in range(count):
                table[start + i] = cores
    return out


def check_node(alloc: NodeAlloc, gpu_cores: dict[int, frozenset[int]], cpus_per_gpu: int | None = None) -> list[str]:
    """Problems with one node's allocation ([] = the rule holds). ``cpus_per_gpu`` defaults to the
    job's cores on the node divided evenly by its GPUs there."""
    problems: list[str] = []
    if not alloc.gpu_idx:
        return problems
    cpg = cpus_per_gpu if cpus_per_gpu is not None else len(alloc.cpu_ids) // len(alloc.gpu_idx)
    groups: dict[frozenset[int], list[int]] = {}
    for g in sorted(alloc.gpu_idx):
        groups.setdefault(gpu_cores.get(g, frozenset()), []).append(g)
    for cores, gpus in groups.items():
        have = len(alloc.cpu_ids & cores)
        if have < cpg * len(gpus):
            problems.append(f"{alloc.node}: GPUs {','.join(map(str, gpus))} have {have} local cores of the job's, "
                            f"need {cpg * len(gpus)}")
    local_any = frozenset().union(*groups)
    remote = sorted(alloc.cpu_ids - local_any)
    if remote:
        problems.append(f"{alloc.node}: cores {','.join(map(str, remote))} are remote to all of the job's GPUs")
    return problems


def check_job(allocs: Sequence[NodeAlloc], gres_conf: dict[str, dict[int, frozenset[int]]],
              cpus_per_gpu: int | None = None) -> list[str]:
    """Problems with a whole job ([] = every node meets the rule); ``allocs``: its per-node allocations."""
    problems = []
    if not allocs:
        return ["no per-node allocation lines (job not running?)"]
    for alloc in allocs:
        table = gres_conf.get(alloc.node) or gres_conf.get("*") or {}
        problems += check_node(alloc, table, cpus_per_gpu)
    return problems


__all__ = ["parse_gres_conf", "check_node", "check_job", "NodeAlloc"]
