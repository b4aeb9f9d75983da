# SPDX-License-Identifier: Apache-2.0
"""The CPU layout behind a ``topo -m`` capture: guessed from the capture alone (no lscpu given),
or an lscpu checked against it (``check_against_lscpu``: output of another machine is refused).

Sockets are derived from the **disjoint CPU sets** of the GPUs' ``CPU Affinity`` cells: affinity
cells that share a cpu are merged, and each resulting disjoint set is taken as one socket. Cores are
split evenly between those sockets in OS order when every set fits one share (the usual Linux
numbering); otherwise each core goes to the set that holds it, and a core that no GPU names goes to
the set of the nearest lower core that one does. Further assumptions: the node has cpus ``0..max``;
hardware threads are ``i`` and ``i + N/2`` when every set is two ranges mirrored that way (Linux x86
enumeration). Every assumption is spelled out in ``CpuLayout.socket_assumption``; ``Sockets=`` needs
``lscpu -p`` to be exact (an NPS4 EPYC shows one set per GPU-bearing NUMA node, not per socket).

Work is linear in the cpus the distinct affinity cells name (the parser bounds their total).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Mapping, Sequence

from slurm_gpu.cpulist import format_cpulist
from slurm_gpu.errors import TopologyError
from slurm_gpu.topology.lscpu import CpuLayout
from slurm_gpu.topology.model import NumaNode, Thread
from slurm_gpu.topology.smi_table import SmiGpu, SmiTable


def disjoint_sets(groups: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Merge cpu sets that share a cpu; the results are sorted by their lowest cpu."""
    parent = list(range(len(groups)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[int, int] = {}
    for gi, g in enumerate(groups):
        for c in g:
            o = owner.setdefault(c, gi)
            if o != gi:
                ra, rb = find(o), find(gi)
                if ra != rb:
                    parent[rb] = ra
    merged: dict[int, set[int]] = {}
    for gi, g in enumerate(groups):
        merged.setdefault(find(gi), set()).update(g)
    return sorted((tuple(sorted(s)) for s in merged.values()), key=lambda s: s[0])


def _mirrored(cpus: tuple[int, ...], half: int) -> bool:
    low = {c for c in cpus if c < half}
    return bool(low) and len(format_cpulist(cpus).split(",")) >= 2 and {c + half for c in low} == {
        c for c in cpus if c >= half
    }


def _socket_of_core(sets_cores: list[set[int]], n_cores: int) -> tuple[list[int], bool]:
    """Socket per core: an even split in OS order when each set fits one share, else by set."""
    k = len(sets_cores)
    if n_cores % k == 0:
        per = n_cores // k
        shares = [{c // per for c in cores} for cores in sets_cores]
        if all(len(s) == 1 for s in shares) and len({next(iter(s)) for s in shares}) == k:
            return [c // per for c in range(n_cores)], True
    owner = {c: i for i, cores in enumerate(sets_cores) for c in cores}
    covered = sorted(owner)
    out = []
    for c in range(n_cores):
        if c in owner:
            out.append(owner[c])
        else:
            j = bisect_right(covered, c) - 1
            out.append(owner[covered[j]] if j >= 0 else 0)
    return out, False


def infer_cpu_layout(affinity: Sequence[tuple[tuple[int, ...] | None, int | None]]) -> CpuLayout:
    """``affinity``: per GPU, its CPU Affinity cpus (None = N/A) and primary NUMA node (or None)."""
    groups = list(dict.fromkeys(cpus for cpus, _n in affinity if cpus))
    if not groups:
        raise TopologyError("no CPU Affinity in the capture; pass the node's `lscpu -p` output too")
    sets = disjoint_sets(groups)
    n = max(s[-1] for s in sets) + 1
    half = n // 2
    smt = n % 2 == 0 and all(_mirrored(g, half) for g in groups)
    n_cores = half if smt else n
    sets_cores = [{c % n_cores for c in s} for s in sets]
    socket_of, even = _socket_of_core(sets_cores, n_cores)
    numa_of: dict[int, int] = {}
    for cpus, node in dict.fromkeys((cpus, node) for cpus, node in affinity if cpus and node is not None):
        for c in cpus:
            numa_of[c] = node
    threads = tuple(
        Thread(os_id=c, socket=socket_of[c % n_cores], core_key=c % n_cores, numa_node=numa_of.get(c))
        for c in range(n)
    )
    numa_ids = sorted({node for cpus, node in affinity if cpus and node is not None})
    by_node: dict[int, list[int]] = {k: [] for k in numa_ids}
    for c, k in numa_of.items():
        by_node[k].append(c)
    nodes = tuple(NumaNode(id=k, cpus=tuple(sorted(v))) for k, v in by_node.items())
    shown = " | ".join(format_cpulist(s) for s in sets[:3]) + (" | ..." if len(sets) > 3 else "")
    count = Counter(socket_of)
    per = [count[s] for s in range(len(sets))]
    cores_text = f"{per[0]} cores each" if len(set(per)) == 1 else f"{'/'.join(map(str, per[:8]))} cores"
    assumption = (
        f"no lscpu given: {len(sets)} socket(s) derived from the disjoint GPU CPU-affinity sets ({shown}), "
        f"{cores_text} ({'even split' if even else 'by set'}), cpus 0-{n - 1}, "
        f"{'2 threads' if smt else '1 thread'} per core; pass --lscpu for exact sockets and cores"
    )
    return CpuLayout(threads, nodes, (), source=None, socket_assumption=assumption)


def primary_numa(g: SmiGpu, layout_numa: Mapping[int, NumaNode]) -> int | None:
    """The GPU's NUMA node: of a Grace-style list, the node with CPUs (the one holding the GPU's
    cpus when several have CPUs); a single id as printed."""
    ids = g.numa_nodes or ()
    with_cpus = [i for i in ids if i in layout_numa and layout_numa[i].cpus]
    if g.cpus and len(with_cpus) > 1:
        mine = set(g.cpus)
        with_cpus = [i for i in with_cpus if mine & set(layout_numa[i].cpus)] or with_cpus
    return with_cpus[0] if with_cpus else g.numa_node


def check_against_lscpu(table: SmiTable, layout: CpuLayout, source: str) -> None:
    """An lscpu from another machine: one line naming both files and what disagrees."""
    known = {t.os_id for t in layout.threads}
    numa = {n.id: n for n in layout.numa_nodes}
    lsrc = layout.source or "lscpu"
    for g in table.gpus:
        where = f"{source}:{g.line}"
        if g.cpus is not None and not known.issuperset(g.cpus):
            raise TopologyError(
                f"{where}: GPU{g.index} CPU Affinity {format_cpulist(g.cpus)} is outside the node's cpus "
                f"{format_cpulist(known)} ({lsrc}); the capture and the lscpu output are from different machines"
            )
        for k in g.numa_nodes or ():
            if numa and k not in numa:
                raise TopologyError(
                    f"{where}: GPU{g.index} NUMA Affinity {k} is not a NUMA node of this node "
                    f"(known: {format_cpulist(numa)} in {lsrc}); "
                    "the capture and the lscpu output are from different machines"
                )
        pk = primary_numa(g, numa)
        if g.cpus and pk is not None and pk in numa and numa[pk].cpus and not set(g.cpus) & set(numa[pk].cpus):
            raise TopologyError(
                f"{where}: GPU{g.index} CPU Affinity {format_cpulist(g.cpus)} has no cpu of its NUMA node {pk}, "
                f"which {lsrc} gives cpus {format_cpulist(numa[pk].cpus)}; the two files are from different machines"
            )
