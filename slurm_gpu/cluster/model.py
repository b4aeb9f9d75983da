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
  counts 1); None without such jobs. An untyped GPU request counts toward every GPU type.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from slurm_gpu.plain import NamedTuple
from slurm_gpu.slurm.records import GresCount, JobGres, NodeRecord

# node state words (scontrol prints FLAG+FLAG, with * ~ # ! % $ @ ^ - suffixes) that keep new jobs off
UNAVAILABLE_WORDS = frozenset({"DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "POWERED_DOWN",
                               "POWER_DOWN", "POWERING_DOWN", "POWERING_UP", "POWERED_OFF", "NOT_RESPONDING",
                               "FUTURE", "INVAL", "UNKNOWN", "REBOOT_ISSUED"})
_SUFFIXES = "*~#!%$@^-"
_MIG_RE = re.compile(r"\d+g\.\d+gb")
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

    @property
    def free(self) -> int:
        return 0 if self.availability == "unavailable" else max(self.total - self.allocated, 0)


def node_units(node: NodeRecord, needs: Mapping[str, tuple[int, int]]) -> list[NodeUnits]:
    """The node's GRES keys with their counts. ``needs``: partition -> (CPUs, MB) per GPU."""
    totals: dict[str, list[Any]] = {}
    for item in node.gres:
        ku = unit_of(item)
        if ku:
            totals.setdefault(ku[0], [ku[1], 0, 0])[1] += item.count
    for item in node.gres_used:
        ku = unit_of(item)
        if ku and ku[0] in totals:
            totals[ku[0]][2] += item.count
    availability = node_availability(node.state)
    cpus_free = max(node.cpus - node.cpus_alloc, 0)
    mem_free = max(node.memory_mb - node.memory_alloc_mb, 0)
    out = []
    for key, (unit, total, used) in totals.items():
        free = 0 if availability == "unavailable" else max(total - used, 0)
        usable = {}
        for part in node.partitions or ("",):
            cpg, mpg = needs.get(part, (1, 0))
            n = free
            if unit in WHOLE_UNITS:
                n = min(n, cpus_free // cpg if cpg > 0 else n, mem_free // mpg if mpg > 0 else n)
            usable[part] = n
        out.append(NodeUnits(node.name, key, unit, total, used, availability, usable, node.partitions))
    return out


def job_mix(jobs: Iterable[JobGres], keys: Mapping[str, str]) -> dict[str, dict[int, int]]:
    """key -> units per node asked -> number of jobs. ``keys``: key -> unit of the cluster's keys."""
    mix: dict[str, dict[int, int]] = {}
    gpu_keys = [k for k, u in keys.items() if u == "gpu"]
    for job in jobs:
        for item in job.request:
            ku = unit_of(item)
            if ku is None or item.count <= 0:
                continue
            targets = gpu_keys if (item.name == "gpu" and item.gres_type is None) else [ku[0]]
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
    free_by_node = [r.free for r in rows]
    free = sum(free_by_node)
    usable = [(r.usable.get(partition, 0) if partition is not None else max(r.usable.values(), default=0))
              for r in rows]
    most = min(max((r.total for r in rows), default=0), MAX_K)
    frag = {k: _share(sum(f for f in free_by_node if f < k), free) for k in range(1, most + 1)}
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
        "largest_startable": {"one_node": max(usable, default=0), "any_nodes": sum(usable)},
        "fragmentation": {str(k): v for k, v in frag.items()},
        "fragmentation_job_mix": mixed,
    }


def summarise(nodes: Sequence[NodeRecord], jobs: Iterable[JobGres] = (),
              needs: Mapping[str, tuple[int, int]] | None = None) -> Summary:
    """The ``slurm-gpu cluster --json`` document (docs/cluster.md "JSON contract")."""
    needs = needs or {}
    rows = [u for node in nodes for u in node_units(node, needs)]
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
    return {
        "schema": "slurm-gpu.cluster/1",
        "nodes": {"total": len(nodes), "unavailable": availability.count("unavailable"),
                  "planned": availability.count("planned")},
        "types": {key: stats(by_key[key], None, mix.get(key)) for key in sorted(by_key)},
        "partitions": partitions,
        "job_mix": {key: {str(k): n for k, n in sorted(sizes.items())} for key, sizes in sorted(mix.items())},
    }


__all__ = ["Summary", "summarise", "stats", "node_units", "NodeUnits", "job_mix", "unit_of", "node_availability",
           "state_words", "UNAVAILABLE_WORDS"]
