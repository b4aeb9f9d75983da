# SPDX-License-Identifier: Apache-2.0
"""``topology_from_json``: the inverse of ``Topology.to_json()``, strict about shapes and types.

Topology JSON is read by root-run code (``slurm-gpu topo ... --from-file x.json``), so every value is
checked before it is used: exact keys, integers that are not booleans, bounded ids, lists where lists
belong, no duplicate GPU index or cpu id, at least one socket. A wrong file gives one line naming the
JSON path of the first problem (``gpus[3].index: ...``), never a traceback from deeper code.
"""

from __future__ import annotations

import re
from dataclasses import MISSING, fields
from typing import Any

from slurm_gpu.errors import TopologyError
from slurm_gpu.topology.model import (
    MAX_CPUS,
    MAX_GPUS,
    RELATION,
    Cpu,
    Gpu,
    Link,
    Nic,
    NumaNode,
    Topology,
    clip,
)

_MAX_ID = 1 << 20  # NUMA node, socket and core ids; larger means a corrupt file
_LABEL = re.compile(r"(GPU|NIC)[0-9]{1,5}")
_MAX_TEXT = 4096

# field -> kind: "int" (>= 0), "int?" (int or null), "str", "str?", "bool", "ints" (list of ints),
# "ints?" (list or null), "strs" (list of strings)
_KINDS: dict[type, dict[str, str]] = {
    Cpu: {"os_id": "int", "core": "int", "socket": "int", "numa_node": "int?", "thread": "int"},
    NumaNode: {"id": "int", "cpus": "ints", "socket": "int?", "memory_mb": "int?"},
    Gpu: {
        "index": "int",
        "minor": "int?",
        "pci_bus_id": "str?",
        "uuid": "str?",
        "name": "str?",
        "memory_mib": "int?",
        "numa_node": "int?",
        "cpus": "ints?",
        "mig_capable": "bool",
    },
    Nic: {"index": "int", "name": "str", "numa_node": "int?", "pci_bus_id": "str?"},
    Link: {"a": "str", "b": "str", "kind": "str", "switched": "bool"},
}
_TOP = {
    "sockets": "int",
    "cores_per_socket": "int",
    "threads_per_core": "int",
    "memory_mb": "int?",
    "notes": "strs",
    "socket_assumption": "str?",
}
_LISTS = {"numa_nodes": NumaNode, "cpus": Cpu, "gpus": Gpu, "nics": Nic, "links": Link}
_OPTIONAL = {"memory_mb", "notes", "socket_assumption", "nics", "links"}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _value(v: Any, kind: str, where: str) -> Any:
    if kind.endswith("?"):
        if v is None:
            return None
        kind = kind[:-1]
    if kind == "int":
        if not _is_int(v) or not 0 <= v < (1 << 53):
            raise TopologyError(f"topology JSON: {where}: expected a non-negative integer, got {clip(v)}")
        return v
    if kind == "bool":
        if not isinstance(v, bool):
            raise TopologyError(f"topology JSON: {where}: expected true or false, got {clip(v)}")
        return v
    if kind == "str":
        if not isinstance(v, str) or len(v) > _MAX_TEXT:
            raise TopologyError(f"topology JSON: {where}: expected a string, got {clip(v)}")
        return v
    if not isinstance(v, list) or len(v) > MAX_CPUS:
        raise TopologyError(f"topology JSON: {where}: expected a list (at most {MAX_CPUS} items), got {clip(v)}")
    item = "str" if kind == "strs" else "int"
    return tuple(_value(x, item, f"{where}[{i}]") for i, x in enumerate(v))


def _record(cls: type, data: Any, where: str) -> Any:
    kinds = _KINDS[cls]
    if not isinstance(data, dict):
        raise TopologyError(f"topology JSON: {where}: expected an object with keys {', '.join(kinds)}")
    unknown = [k for k in data if k not in kinds]
    if unknown:
        raise TopologyError(f"topology JSON: {where}: unknown key {clip(unknown[0])}; expected {', '.join(kinds)}")
    required = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]
    missing = [k for k in required if k not in data]
    if missing:
        raise TopologyError(f"topology JSON: {where}: missing key {missing[0]!r}")
    return cls(**{k: _value(v, kinds[k], f"{where}.{k}") for k, v in data.items()})


def topology_from_json(data: object) -> Topology:
    """Inverse of ``Topology.to_json()``. Raises TopologyError (one line) on a wrong shape or value."""
    if not isinstance(data, dict):
        raise TopologyError("topology JSON: expected an object from `topo show --json --full`")
    known = set(_TOP) | set(_LISTS)
    unknown = [k for k in data if k not in known]
    if unknown:
        raise TopologyError(f"topology JSON: unknown key {clip(unknown[0])}; expected {', '.join(sorted(known))}")
    missing = [k for k in sorted(known - _OPTIONAL) if k not in data]
    if missing:
        raise TopologyError(f"topology JSON: missing key {missing[0]!r}; expected the output of `show --json --full`")
    top = {k: _value(data[k], kind, k) for k, kind in _TOP.items() if k in data}
    lists: dict[str, tuple[Any, ...]] = {}
    for key, cls in _LISTS.items():
        items = data.get(key, [])
        if not isinstance(items, list) or len(items) > MAX_CPUS:
            raise TopologyError(f"topology JSON: {key}: expected a list (at most {MAX_CPUS} items)")
        lists[key] = tuple(_record(cls, x, f"{key}[{i}]") for i, x in enumerate(items))
    for key in ("sockets", "cores_per_socket", "threads_per_core"):
        if top[key] < 1:
            raise TopologyError(f"topology JSON: {key}: must be at least 1, got {top[key]}")
    _check_consistency(top, lists)
    return Topology(
        sockets=top["sockets"],
        cores_per_socket=top["cores_per_socket"],
        threads_per_core=top["threads_per_core"],
        memory_mb=top.get("memory_mb"),
        numa_nodes=lists["numa_nodes"],
        cpus=lists["cpus"],
        gpus=lists["gpus"],
        nics=lists["nics"],
        links=lists["links"],
        notes=top.get("notes", ()),
        socket_assumption=top.get("socket_assumption"),
    )


def _dupe(values: list[int]) -> int | None:
    seen: set[int] = set()
    for v in values:
        if v in seen:
            return v
        seen.add(v)
    return None


def _check_consistency(top: dict[str, Any], lists: dict[str, tuple[Any, ...]]) -> None:
    cpus: tuple[Cpu, ...] = lists["cpus"]
    gpus: tuple[Gpu, ...] = lists["gpus"]
    if not cpus:
        raise TopologyError("topology JSON: cpus: the node needs at least one CPU")
    dup = _dupe([g.index for g in gpus])
    if dup is not None:
        raise TopologyError(f"topology JSON: gpus: GPU index {dup} appears twice")
    if len(gpus) > MAX_GPUS or any(g.index >= MAX_GPUS for g in gpus):
        raise TopologyError(f"topology JSON: gpus: at most {MAX_GPUS} GPUs with indexes below {MAX_GPUS}")
    dup = _dupe([c.os_id for c in cpus])
    if dup is not None:
        raise TopologyError(f"topology JSON: cpus: cpu {dup} appears twice")
    dup = _dupe([n.id for n in lists["numa_nodes"]])
    if dup is not None:
        raise TopologyError(f"topology JSON: numa_nodes: NUMA node {dup} appears twice")
    known = {c.os_id for c in cpus}
    for c in cpus:
        if c.os_id >= MAX_CPUS or max(c.core, c.socket, c.numa_node or 0, c.thread) >= _MAX_ID:
            raise TopologyError(f"topology JSON: cpus: cpu {c.os_id} has an id beyond the limits")
    for where, ids in [(f"gpus index {g.index}", g.cpus or ()) for g in gpus] + [
        (f"numa_nodes id {n.id}", n.cpus) for n in lists["numa_nodes"]
    ]:
        if not set(ids) <= known:
            raise TopologyError(f"topology JSON: {where}: names cpus that are not in cpus")
    sockets = {c.socket for c in cpus}
    if len(sockets) != top["sockets"]:
        raise TopologyError(
            f"topology JSON: sockets is {top['sockets']} but the cpus name {len(sockets)} socket(s)"
        )
    for lk in lists["links"]:
        if not (_LABEL.fullmatch(lk.a) and _LABEL.fullmatch(lk.b)):
            raise TopologyError(f"topology JSON: links: devices must be GPU<n> or NIC<n>, got {clip(lk.a)}")
        if not RELATION.match(lk.kind) or lk.kind in ("X", "SOC"):
            raise TopologyError(f"topology JSON: links: unknown relation {clip(lk.kind)}")
