# SPDX-License-Identifier: Apache-2.0
"""Parse ``lscpu -p`` (parsable) or plain ``lscpu`` output into threads and NUMA nodes.

``lscpu -p`` gives each CPU's core, socket and node: exact. Plain ``lscpu`` gives only counts and
the ``NUMA nodeN CPU(s):`` lists, so thread siblings are derived from the usual Linux x86
enumeration (cpu ``i`` and ``i + cores`` are siblings, cores numbered socket by socket); the
result is checked against the NUMA lists and the assumption is recorded in a note.
"""

from __future__ import annotations

import re

from slurm_gpu.errors import TopologyError
from slurm_gpu.plain import Record, record
from slurm_gpu.topology.model import MAX_CPUS, NumaNode, Thread, checked_cpulist, clip

_ID = re.compile(r"[0-9]{1,6}")  # lscpu counts and ids; more digits mean a corrupt file


@record
class CpuLayout(Record):
    threads: tuple[Thread, ...]
    numa_nodes: tuple[NumaNode, ...]
    notes: tuple[str, ...] = ()
    source: str | None = None  # the lscpu file it came from; None when inferred from topo -m
    socket_assumption: str | None = None  # how sockets were guessed (inferred layouts only)


def parse_lscpu(text: str, source: str = "lscpu") -> CpuLayout:
    """Either format; ``lscpu -p`` is recognised by its ``# CPU,Core,...`` header or CSV rows."""
    lines = text.splitlines()
    if any(re.match(r"^#\s*CPU,", ln) for ln in lines) or any(re.match(r"^[0-9]+,", ln) for ln in lines):
        return _parse_parsable(lines, source)
    return _parse_plain(lines, source)


def _parse_parsable(lines: list[str], source: str) -> CpuLayout:
    cols = ["CPU", "Core", "Socket", "Node"]  # lscpu -p default columns
    threads: list[Thread] = []
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            m = re.match(r"^#\s*(CPU,.*)$", line)
            if m:
                cols = [c.strip() for c in m.group(1).split(",")]
            continue
        cells = [c.strip() for c in line.split(",")]
        row = dict(zip(cols, cells, strict=False))  # a short row is reported just below
        if any(c not in row for c in ("CPU", "Core", "Socket") if c in cols) or "CPU" not in row:
            raise TopologyError(f"{source}:{lineno}: expected CSV columns {','.join(cols)}, got {line!r}")
        node_s = row.get("Node", "")
        values = [row["CPU"], row.get("Core") or row["CPU"], row.get("Socket") or "0"]
        if not all(_ID.fullmatch(v) for v in values) or node_s not in ("", "-") and not _ID.fullmatch(node_s):
            raise TopologyError(
                f"{source}:{lineno}: bad lscpu -p row {clip(line)}; expected integers in columns {','.join(cols)}"
            )
        cpu, core, socket = (int(v) for v in values)
        if cpu >= MAX_CPUS:
            raise TopologyError(f"{source}:{lineno}: cpu {cpu} is beyond Slurm's limit {MAX_CPUS}")
        if len(threads) >= MAX_CPUS:
            raise TopologyError(f"{source}:{lineno}: more than {MAX_CPUS} CPU rows")
        node = int(node_s) if node_s not in ("", "-") else None
        threads.append(Thread(os_id=cpu, socket=socket, core_key=core, numa_node=node))
    if not threads:
        raise TopologyError(f"{source}: no CPU rows found; expected `lscpu -p` or `lscpu` output")
    nodes: dict[int, list[int]] = {}
    for t in threads:
        if t.numa_node is not None:
            nodes.setdefault(t.numa_node, []).append(t.os_id)
    numa = tuple(NumaNode(id=n, cpus=tuple(sorted(c)), socket=_socket_of(threads, c)) for n, c in sorted(nodes.items()))
    return CpuLayout(tuple(threads), numa, source=source)


def _socket_of(threads: list[Thread], cpus: list[int] | tuple[int, ...]) -> int | None:
    socket = {t.os_id: t.socket for t in threads}
    sockets = {socket[c] for c in cpus if c in socket}
    return sockets.pop() if len(sockets) == 1 else None


_KEYS = {
    "CPU(s)": "cpus",
    "On-line CPU(s) list": "online",
    "Thread(s) per core": "threads",
    "Core(s) per socket": "cores",
    "Socket(s)": "sockets",
    "Core(s) per cluster": "cores",  # some arm64 lscpu builds
}


def _parse_plain(lines: list[str], source: str) -> CpuLayout:
    vals: dict[str, str] = {}
    numa: dict[int, tuple[int, ...]] = {}
    numa_line: dict[int, int] = {}
    lines_of: dict[str, int] = {}
    for lineno, raw in enumerate(lines, 1):
        key, sep, value = raw.partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key in _KEYS and _KEYS[key] not in vals:
            vals[_KEYS[key]] = value
            lines_of[_KEYS[key]] = lineno
        m = re.match(r"^NUMA node([0-9]{1,5}) CPU\(s\)$", key)
        if m:
            numa[int(m.group(1))] = checked_cpulist(value, f"{source}:{lineno}", key)
            numa_line[int(m.group(1))] = lineno
    try:
        if not all(_ID.fullmatch(vals.get(k, "1")) for k in ("threads", "cores", "sockets")):
            raise ValueError
        n_threads, n_cores = int(vals["threads"]), int(vals["cores"])
        n_sockets = int(vals.get("sockets", "1"))  # some arm64 lscpu builds print Cluster(s) instead
    except (KeyError, ValueError):
        raise TopologyError(
            f"{source}: lscpu output lacks an integer 'Thread(s) per core', 'Core(s) per socket' or 'Socket(s)'; "
            "expected `lscpu` or `lscpu -p` output"
        ) from None
    if min(n_threads, n_cores, n_sockets) < 1:
        raise TopologyError(f"{source}: lscpu counts must be positive, got {n_sockets}x{n_cores}x{n_threads}")
    total_cores = n_cores * n_sockets
    total = total_cores * n_threads
    if total > MAX_CPUS:
        raise TopologyError(
            f"{source}: {n_sockets} sockets x {n_cores} cores x {n_threads} threads is more than {MAX_CPUS} CPUs"
        )
    online = (
        checked_cpulist(vals["online"], f"{source}:{lines_of['online']}", "On-line CPU(s) list")
        if "online" in vals
        else tuple(range(total))
    )
    if online != tuple(range(total)):
        raise TopologyError(
            f"{source}: on-line CPUs {vals.get('online')!r} are not 0-{total - 1} "
            f"({n_sockets} sockets x {n_cores} cores x {n_threads} threads); use `lscpu -p` instead"
        )
    cpu_node = {c: n for n, cs in numa.items() for c in cs}
    threads: list[Thread] = []
    for cpu in range(total):
        core = cpu % total_cores
        threads.append(Thread(os_id=cpu, socket=core // n_cores, core_key=core, numa_node=cpu_node.get(cpu)))
    # Check the sibling assumption: a core's threads must share a NUMA node.
    siblings: dict[int, list[int]] = {}
    for t in threads:
        siblings.setdefault(t.core_key, []).append(t.os_id)
    for n, cs in numa.items():
        members = set(cs)
        for c in cs:
            if c >= total:
                raise TopologyError(f"{source}:{numa_line[n]}: NUMA node{n} lists cpu {c} but there are {total} CPUs")
            if not all(s in members for s in siblings[c % total_cores]):
                raise TopologyError(
                    f"{source}:{numa_line[n]}: NUMA node{n} splits the threads of one core; "
                    "plain lscpu cannot describe this node, use `lscpu -p`"
                )
    nodes = tuple(NumaNode(id=n, cpus=cs, socket=_socket_of(threads, cs)) for n, cs in sorted(numa.items()))
    note: tuple[str, ...] = ()
    if n_threads > 1:
        note = (
            f"{source}: thread siblings assumed to be cpu i and i+{total_cores} "
            "(plain lscpu; use lscpu -p to be exact)",
        )
    return CpuLayout(tuple(threads), nodes, note, source=source)
