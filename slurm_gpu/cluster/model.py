# SPDX-License-Identifier: Apache-2.0
"""The cluster view's numbers (pure: parsed records in, plain data out). docs/cluster.md defines them.

Per GRES *key* (a GPU type such as ``h100``; a MIG profile type such as ``a100_1g.10gb``; ``shard:h100``;
``mps``), over the nodes that have it, and again per partition:

- ``total`` = ``allocated`` + ``free`` + ``unavailable``. ``allocated`` is what GresUsed says is in use;
  ``unavailable`` are the not-allocated units on nodes that take no new job (drained, draining, down,
  failed, not responding, power-saved or powering up/down, future); ``free`` the rest. ``planned`` is the
  part of ``free`` on nodes that backfill has planned for a pending job (state ``PLANNED``, 23.02+).
- ``stranded``: free GPUs (and MIG slices) on a node without the cores or memory per GPU left to start
  a job on them: ``free - min(free, cpus_free // cpus_per_gpu, mem_free // mem_per_gpu)``, with the
  partition's DefCpuPerGPU / DefMemPerGPU (1 CPU and no memory where it sets none).
- ``largest_startable``: ``one_node`` = the most usable (free, not stranded) units on one node;
  ``any_nodes`` = the usable units of all nodes together (a job spread over nodes).
- ``fragmentation[k]`` for k = 1 .. the most units a node has: the share of free units that sit on nodes
  with fewer than k free (0 when nothing is free). ``fragmentation_job_mix`` = sum_k p_k x
  fragmentation[k], with p_k the share of recent jobs asking k units per node (k beyond every node
  counts 1); None without such jobs. An untyped GPU (shard) request counts toward every GPU (shard) type.
- ``fabric`` (only where ``scontrol show topology`` names leaf switches or blocks): per leaf switch and block
  its nodes, ``free_nodes`` (every GPU usable) and the usable units per key; ``largest_startable_one_unit``
  = per key, the most usable units within one leaf / one block (the largest job startable there).
- Shards (``shard:h100``): a GPU is held whole or in shards, never both, and one job's shards on a node
  come from one GPU (:func:`node_units`); ``fragmentation`` counts the free shards per GPU.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from slurm_gpu.plain import NamedTuple
from slurm_gpu.slurm.records import GresCount, JobGres, NodeRecord
from slurm_gpu.slurm.topology_show import TopologyUnit

# node state words (scontrol prints FLAG+FLAG, with * ~ # ! % $ @ ^ - suffixes) that keep new jobs off
UNAVAILABLE_WORDS = frozenset({"DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "POWERED_DOWN",
                               "POWER_DOWN", "POWERING_DOWN", "POWERING_UP", "POWERED_OFF", "NOT_RESPONDING",
                               "FUTURE", "INVAL", "UNKNOWN", "REBOOT_ISSUED"})
_SUFFIXES = "*~#!%$@^-"
_MIG_RE = re.compile(r"[0-9]+g\.[0-9]+gb")
WHOLE_UNITS = ("gpu", "mig")  # units that need their cores and memory per GPU
Summary = dict[str, Any]  # the --json document (docs/cluster.md)
MAX_K = 1024  # fragmentation is given for job sizes up to this many units per node


def state_words(state: str) -> set[str]:
    """``IDLE+DRAIN`` -> {IDLE, DRAIN}; ``DOWN*`` -> {DOWN, NOT_RESPONDING}; ``IDLE~`` -> {IDLE, POWERED_DOWN}."""
    words: set[str] = set()
    for word in state.upper().split("+"):
        if word.endswith("*"):
            words.add("NOT_RESPONDING")
        if word.endswith("~"):
            words.add("POWERED_DOWN")
        if word.endswith("-") and word.rstrip(_SUFFIXES):
            words.add("PLANNED")
        words.add(word.rstrip(_SUFFIXES))
    return words


def node_availability(state: str) -> str:
    """"unavailable", "planned" or "ok"."""
    words = state_words(state)
    if words & UNAVAILABLE_WORDS:
        return "unavailable"
    return "planned" if "PLANNED" in words else "ok"


def unit_of(item: GresCount) -> tuple[str, str] | None:
    """(key, unit) of a GRES item: ``gpu:h100`` -> (h100, gpu); ``gpu:a100_1g.10gb`` -> (.., mig);
    ``shard:h100`` -> (shard:h100, shard); ``mps`` -> (mps, mps); untyped ``gpu`` -> (gpu, gpu)."""
    if item.name == "gpu":
        if item.gres_type is None:
            return "gpu", "gpu"
        return item.gres_type, "mig" if _MIG_RE.search(item.gres_type) else "gpu"
    if item.name in ("shard", "mps"):
        return (f"{item.name}:{item.gres_type}" if item.gres_type else item.name), item.name
    return None


class NodeUnits(NamedTuple):
    """One node's count of one GRES key."""

    node: str
    key: str
    unit: str
    total: int
    allocated: int
    availability: str  # ok, planned, unavailable
    usable: dict[str, int]  # partition -> free units a job of that partition can start here (not stranded)
    partitions: tuple[str, ...]
    pieces: tuple[int, ...] = ()  # free units per place one job takes them from: the node; for shards each GPU
    job_max: int = 0  # the most units one job can hold here (shards: the most on one GPU; else total)

    @property
    def free(self) -> int:
        return 0 if self.availability == "unavailable" else max(self.total - self.allocated, 0)


HOLDING_STATES = frozenset({"RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING", "STOPPED"})
MAX_GPU_INDEX = 4096  # a node claiming more GPUs than this is left to the plain counts


def _gpu_indexes(node: NodeRecord) -> dict[str | None, list[int]]:
    """GPU type -> its GPU indexes (Slurm numbers a node's gpu GRES 0.. across its types in Gres order)."""
    out: dict[str | None, list[int]] = {}
    first = 0
    for item in node.gres:
        if item.name == "gpu":
            if first + item.count > MAX_GPU_INDEX:
                return {}
            out.setdefault(item.gres_type, []).extend(range(first, first + item.count))
            first += item.count
    return out


def shard_gpus(node: NodeRecord, held: Iterable[GresCount] = ()) -> dict[str | None, dict[int, tuple[int, int]]]:
    """GPU type -> {GPU index: (shards held, shards)} of the node's gres/shard. 23.02+ prints both per GPU in
    GresUsed (``shard:h100:5(3/4,2/4)``); 22.05 prints only the GPUs with shards held (``(IDX:0,4)``): then
    the shards count as spread evenly over the type's GPUs (as Slurm spreads a count without ``File=``; the
    record has no per-GPU counts) and the held counts come from ``held``, the running jobs' ``GRES=`` items
    on this node (``shard:h100:3(IDX:0)``), at least 1 on each GPU GresUsed lists. The jobs count too
    where GresUsed lost a GPU: 22.05.8 clears a GPU's bit when one of two shard jobs on it ends (measured
    in the lab, docs/cluster.md "Shards")."""
    gpus = _gpu_indexes(node)
    out: dict[str | None, dict[int, tuple[int, int]]] = {}
    for item in node.gres:
        if item.name == "shard" and gpus.get(item.gres_type):
            idxs = gpus[item.gres_type]
            per, extra = divmod(item.count, len(idxs))
            out[item.gres_type] = {g: (0, per + (n < extra)) for n, g in enumerate(idxs)}
    by_job: dict[tuple[str | None, int], int] = {}
    for item in held:
        if item.name == "shard" and item.idx:
            share = -(-item.count // len(item.idx))
            for g in item.idx:
                by_job[(item.gres_type, g)] = by_job.get((item.gres_type, g), 0) + share
    for item in node.gres_used:
        per_gpu = out.get(item.gres_type) if item.name == "shard" else None
        if per_gpu is None:
            continue
        idxs = gpus[item.gres_type]
        if item.shares is not None and len(item.shares) == len(idxs):
            per_gpu.update(zip(idxs, item.shares, strict=True))
            continue
        listed = item.idx or frozenset()
        for g in (listed | {g for t, g in by_job if t == item.gres_type}) & per_gpu.keys():
            per_gpu[g] = (min(max(by_job.get((item.gres_type, g), 0), g in listed), per_gpu[g][1]), per_gpu[g][1])
    return out


def node_units(node: NodeRecord, needs: Mapping[str, tuple[int, int]],
               held: Iterable[GresCount] = ()) -> list[NodeUnits]:
    """The node's GRES keys with their counts. ``needs``: partition -> (CPUs, MB) per GPU; ``held``: the
    running jobs' GRES items on this node (22.05's shard counts per GPU, :func:`shard_gpus`).

    Slurm gives a GPU either whole or in shards, never both (gres.html, "Sharding"), and a job's shards
    on a node come from one GPU: a GPU with shards held counts as allocated for its type, the shards of
    a GPU held whole count as allocated shards, and one job can take at most the free shards of one GPU."""
    totals: dict[str, list[Any]] = {}
    for item in node.gres:
        ku = unit_of(item)
        if ku:
            totals.setdefault(ku[0], [ku[1], 0, 0])[1] += item.count
    for item in node.gres_used:
        ku = unit_of(item)
        if ku and ku[0] in totals:
            totals[ku[0]][2] += item.count
    whole: dict[str | None, frozenset[int] | None] = {}
    for item in node.gres_used:
        if item.name == "gpu":
            known = whole.get(item.gres_type, frozenset())
            whole[item.gres_type] = None if item.idx is None or known is None else known | item.idx
    shards = shard_gpus(node, held)
    availability = node_availability(node.state)
    cpus_free = max(node.cpus - node.cpus_alloc, 0)
    mem_free = max(node.memory_mb - node.memory_alloc_mb, 0)
    out = []
    for key, (unit, total, used) in totals.items():
        gtype = None if key in ("gpu", "shard") else key.split(":", 1)[-1]
        per_gpu = shards.get(gtype)
        job_max = total
        pieces: tuple[int, ...] | None = None
        if per_gpu is not None and unit == "shard":
            held_whole = whole.get(gtype) or frozenset()
            pieces = tuple(max(n - h, 0) for g, (h, n) in sorted(per_gpu.items()) if g not in held_whole)
            used, job_max = total - sum(pieces), max((n for _, n in per_gpu.values()), default=0)
        elif per_gpu is not None and unit == "gpu":
            shared = {g for g, (h, _) in per_gpu.items() if h > 0}
            known = whole.get(gtype)
            used = len(known | shared) if known is not None else used + len(shared)
        free = 0 if availability == "unavailable" else max(total - used, 0)
        pieces = () if availability == "unavailable" else (pieces if pieces is not None else (free,))
        usable = {}
        for part in node.partitions or ("",):
            cpg, mpg = needs.get(part, (1, 0))
            n = free
            if unit in WHOLE_UNITS:
                n = min(n, cpus_free // cpg if cpg > 0 else n, mem_free // mpg if mpg > 0 else n)
            usable[part] = n
        out.append(NodeUnits(node.name, key, unit, total, used, availability, usable, node.partitions, pieces,
                             job_max))
    return out


def job_mix(jobs: Iterable[JobGres], keys: Mapping[str, str]) -> dict[str, dict[int, int]]:
    """key -> units per node asked -> number of jobs. ``keys``: key -> unit of the cluster's keys."""
    mix: dict[str, dict[int, int]] = {}
    gpu_keys = [k for k, u in keys.items() if u == "gpu"]
    shard_keys = [k for k, u in keys.items() if u == "shard"]
    for job in jobs:
        for item in job.request:
            ku = unit_of(item)
            if ku is None or item.count <= 0:
                continue
            untyped = item.gres_type is None
            targets = gpu_keys if (item.name == "gpu" and untyped) else shard_keys if (
                item.name == "shard" and untyped) else [ku[0]]
            for key in targets:
                if key in keys:
                    sizes = mix.setdefault(key, {})
                    sizes[item.count] = sizes.get(item.count, 0) + 1
    return mix


def _share(part: int, whole: int) -> float:
    return round(part / whole, 6) if whole else 0.0


def stats(rows: Sequence[NodeUnits], partition: str | None, mix: Mapping[int, int] | None) -> Summary:
    """The figures of one key over ``rows`` (its nodes), for ``partition`` (None: the best partition of
    each node)."""
    total = sum(r.total for r in rows)
    allocated = sum(min(r.allocated, r.total) for r in rows)
    free = sum(r.free for r in rows)
    pieces = [p for r in rows for p in r.pieces]
    usable = [(r.usable.get(partition, 0) if partition is not None else max(r.usable.values(), default=0))
              for r in rows]
    startable = [min(u, max(r.pieces, default=0)) for u, r in zip(usable, rows, strict=True)]
    most = min(max((r.job_max for r in rows), default=0), MAX_K)
    frag = {k: _share(sum(f for f in pieces if f < k), free) for k in range(1, most + 1)}
    mixed = None
    if mix:
        jobs = sum(mix.values())
        mixed = round(sum(n * (frag.get(k, 1.0 if free else 0.0)) for k, n in mix.items()) / jobs, 6)
    return {
        "unit": rows[0].unit if rows else "gpu",
        "nodes": len(rows),
        "total": total,
        "allocated": allocated,
        "free": free,
        "unavailable": total - allocated - free,
        "planned": sum(r.free for r in rows if r.availability == "planned"),
        "stranded": free - sum(usable),
        "largest_startable": {"one_node": max(startable, default=0), "any_nodes": sum(startable)},
        "fragmentation": {str(k): v for k, v in frag.items()},
        "fragmentation_job_mix": mixed,
    }


def fabric_stats(rows: Sequence[NodeUnits], units: Sequence[TopologyUnit]) -> Summary:
    """Per leaf switch (level 0) and per block: its nodes, the nodes with every unit usable (a node a
    multi-node job can take whole), the usable units per key; and per key the largest job startable within
    one unit (the most usable units of one leaf or block)."""
    whole: dict[str, bool] = {}
    for r in rows:
        if r.unit in WHOLE_UNITS:
            whole[r.node] = whole.get(r.node, True) and max(r.usable.values(), default=0) == r.total > 0
    out: list[Summary] = []
    for u in units:
        if u.kind == "aggregate" or (u.kind == "switch" and u.level not in (0, None)):
            continue
        members = set(u.nodes)
        free: dict[str, int] = {}
        for r in rows:
            if r.node in members:
                free[r.key] = free.get(r.key, 0) + min(max(r.usable.values(), default=0), max(r.pieces, default=0))
        out.append({"kind": "leaf" if u.kind == "switch" else "block", "name": u.name, "nodes": len(u.nodes),
                    "free_nodes": sum(1 for n in u.nodes if whole.get(n)), "free": dict(sorted(free.items()))})
    largest: dict[str, Summary] = {}
    for kind in ("leaf", "block"):
        for key in sorted({k for x in out if x["kind"] == kind for k in x["free"]}):
            best = max((x for x in out if x["kind"] == kind), key=lambda x: (x["free"].get(key, 0), x["free_nodes"]))
            largest.setdefault(key, {})[kind] = {"units": best["free"].get(key, 0), "nodes": best["free_nodes"],
                                                 "name": best["name"]}
    return {"units": out, "largest_startable_one_unit": largest}


def summarise(nodes: Sequence[NodeRecord], jobs: Iterable[JobGres] = (),
              needs: Mapping[str, tuple[int, int]] | None = None, fabric: Sequence[TopologyUnit] = ()) -> Summary:
    """The ``slurm-gpu cluster --json`` document (docs/cluster.md "JSON contract")."""
    needs = needs or {}
    jobs = list(jobs)
    held: dict[str, list[GresCount]] = {}
    for job in jobs:
        if job.state in HOLDING_STATES:
            for node_name, items in job.held:
                held.setdefault(node_name, []).extend(items)
    rows = [u for node in nodes for u in node_units(node, needs, held.get(node.name, ()))]
    keys: dict[str, str] = {}
    by_key: dict[str, list[NodeUnits]] = {}
    for r in rows:
        keys.setdefault(r.key, r.unit)
        by_key.setdefault(r.key, []).append(r)
    mix = job_mix(jobs, keys)
    partitions: dict[str, dict[str, Summary]] = {}
    part_names = sorted({p for node in nodes for p in node.partitions})
    for part in part_names:
        for key in sorted(by_key):
            sub = [r for r in by_key[key] if part in r.partitions]
            if sub:
                partitions.setdefault(part, {})[key] = stats(sub, part, mix.get(key))
    availability = [node_availability(n.state) for n in nodes]
    extra = {"fabric": fabric_stats(rows, fabric)} if fabric else {}
    return {
        "schema": "slurm-gpu.cluster/1",
        "nodes": {"total": len(nodes), "unavailable": availability.count("unavailable"),
                  "planned": availability.count("planned")},
        "types": {key: stats(by_key[key], None, mix.get(key)) for key in sorted(by_key)},
        "partitions": partitions,
        "job_mix": {key: {str(k): n for k, n in sorted(sizes.items())} for key, sizes in sorted(mix.items())},
        **extra,
    }


__all__ = ["Summary", "summarise", "stats", "fabric_stats", "node_units", "shard_gpus", "NodeUnits", "job_mix",
           "unit_of", "node_availability", "state_words", "UNAVAILABLE_WORDS"]
