# SPDX-License-Identifier: Apache-2.0
"""The terminal picture of ``slurm-gpu cluster`` (pure: records and the summary in, text out).

Up to ``max_rows`` nodes: one row per node, one cell per GPU (and per MIG slice), cells grouped by socket
(``[0123|4567]``: socket 0, then socket 1), a letter per user holding the GPU (legend below the table).
Beyond that the nodes are summarised: one row per GPU type, availability and number of free GPUs, with
the node count and their hostlist. docs/cluster.md shows both.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping, Sequence

from slurm_gpu.cluster.model import Summary, node_availability, state_words, unit_of
from slurm_gpu.hostlist import compress_hostlist
from slurm_gpu.slurm.records import JobGres, NodeRecord

FREE, UNAVAILABLE, UNKNOWN_JOB = ".", "x", "#"
LETTERS = string.ascii_uppercase + string.ascii_lowercase
OTHERS = "+"  # a user beyond the 52 letters
MAX_ROWS = 64
MAX_CELLS = 256  # cells drawn per GRES item of a node (a recorded text may claim any count)
HOSTLIST_WIDTH = 60


def gpu_owners(jobs: Iterable[JobGres]) -> dict[tuple[str, int], tuple[str, str]]:
    """(node, GPU index) -> (user, job id) of running jobs' ``GRES=…(IDX:…)``. A GPU that shard jobs use
    (``shard:h100:3(IDX:0)``: the index is the GPU's) is theirs too: Slurm gives it to no whole-GPU job
    while they run (docs/cluster.md, "Shards"); a whole-GPU holder wins the cell."""
    owners: dict[tuple[str, int], tuple[str, str]] = {}
    jobs = list(jobs)
    for job in jobs:
        for node, items in job.held:
            for item in items:
                if item.name == "shard" and item.idx:
                    for i in item.idx:
                        owners.setdefault((node, i), (job.user, job.job_id))
    for job in jobs:
        for node, items in job.held:
            for item in items:
                if item.name == "gpu" and item.idx:
                    for i in item.idx:
                        owners[(node, i)] = (job.user, job.job_id)
    return owners


def node_cells(node: NodeRecord, owners: Mapping[tuple[str, int], tuple[str, str]],
               sockets: Mapping[int, int]) -> list[tuple[str, int | None, int, str]]:
    """(key, socket, index, owner user or '' free, '#' busy unknown, 'x' unavailable) per GPU/MIG slice, in
    gres order (Slurm numbers a node's gpu GRES 0.. across its types in that order)."""
    used_idx: set[int] = set()
    used_count: dict[str, int] = {}
    indexed = False
    for item in node.gres_used:
        if item.name == "gpu":
            if item.idx is not None:
                indexed = True
                used_idx |= item.idx
            ku = unit_of(item)
            if ku:
                used_count[ku[0]] = used_count.get(ku[0], 0) + item.count
    down = node_availability(node.state) == "unavailable"
    cells = []
    index = 0
    for item in node.gres:
        if item.name != "gpu":
            continue
        key = unit_of(item)[0]  # type: ignore[index]  # a gpu item always has a key
        for _ in range(min(item.count, MAX_CELLS)):
            owner = owners.get((node.name, index))
            if owner:
                who = owner[0]
            elif (index in used_idx) if indexed else used_count.get(key, 0) > 0:
                who = UNKNOWN_JOB
                if not indexed:
                    used_count[key] -= 1
            else:
                who = UNAVAILABLE if down else ""
            cells.append((key, sockets.get(index), index, who))
            index += 1
    return cells


def gpu_sockets(gres_cores: Mapping[str, Mapping[int, frozenset[int]]],
                nodes: Iterable[NodeRecord]) -> dict[str, dict[int, int]]:
    """node -> GPU index -> socket, from gres.conf's ``Cores=`` (``placement.locality.parse_gres_conf``) and
    the node's CoresPerSocket; a GPU whose cores span sockets, or that names none, has no socket."""
    out: dict[str, dict[int, int]] = {}
    for node in nodes:
        table = gres_cores.get(node.name) or gres_cores.get("*") or {}
        mine = out.setdefault(node.name, {})
        for index, cores in table.items():
            socks = {c // node.cores_per_socket for c in cores}
            if len(socks) == 1:
                mine[index] = socks.pop()
    return out


def _letters(users: Sequence[str]) -> dict[str, str]:
    return {u: (LETTERS[i] if i < len(LETTERS) else OTHERS) for i, u in enumerate(users)}


def _gpu_field(cells: list[tuple[str, int | None, int, str]], letter: Mapping[str, str]) -> str:
    parts = []
    for key in dict.fromkeys(c[0] for c in cells):
        mine = [c for c in cells if c[0] == key]
        groups: dict[int | None, list[str]] = {}
        for _, sock, _, who in sorted(mine, key=lambda c: (c[1] is None, c[1] or 0, c[2])):
            groups.setdefault(sock, []).append(letter.get(who, who) or FREE)
        parts.append(f"{key} [{'|'.join(''.join(g) for g in groups.values())}]")
    return " ".join(parts)


def _gib(mb: int) -> str:
    return f"{mb // 1024}G"


def _summary_table(summary: Summary) -> list[str]:
    lines = [f"{'TYPE':<16} {'UNIT':<6} {'TOTAL':>6} {'ALLOC':>6} {'FREE':>6} {'UNAVAIL':>7} {'PLANNED':>7} "
             f"{'STRANDED':>8} {'LARGEST 1-NODE/ALL':>18} {'FRAG(MIX)':>9}"]
    for key, s in summary["types"].items():
        mix = "-" if s["fragmentation_job_mix"] is None else f"{s['fragmentation_job_mix']:.2f}"
        largest = f"{s['largest_startable']['one_node']}/{s['largest_startable']['any_nodes']}"
        lines.append(f"{key:<16} {s['unit']:<6} {s['total']:>6} {s['allocated']:>6} {s['free']:>6} "
                     f"{s['unavailable']:>7} {s['planned']:>7} {s['stranded']:>8} {largest:>18} {mix:>9}")
    for key, s in summary["types"].items():
        frag = s["fragmentation"]
        ks = [k for k in frag if int(k) & (int(k) - 1) == 0 or k == str(len(frag))]  # 1, 2, 4, 8 and the top
        lines.append(f"fragmentation {key}: " + "  ".join(f"k={k} {frag[k]:.2f}" for k in ks))
    return lines


def _state_label(node: NodeRecord) -> str:
    label = node.state
    if node.reason and node_availability(node.state) == "unavailable":
        label += f" ({node.reason.split(' [', 1)[0][:24]})"
    return label


def _node_rows(nodes: Sequence[NodeRecord], jobs: Sequence[JobGres],
               sockets: Mapping[str, Mapping[int, int]]) -> list[str]:
    owners = gpu_owners(jobs)
    cells = {n.name: node_cells(n, owners, sockets.get(n.name, {})) for n in nodes}
    held: dict[str, int] = {}
    for node_cells_ in cells.values():
        for c in node_cells_:
            if c[3] not in ("", UNKNOWN_JOB, UNAVAILABLE):
                held[c[3]] = held.get(c[3], 0) + 1
    users = sorted(held, key=lambda u: (-held[u], u))
    letter = _letters(users)
    rows = []
    name_w = max([4] + [len(n.name) for n in nodes])
    state_w = max([5] + [len(_state_label(n)) for n in nodes])
    fields = {n.name: _gpu_field(cells[n.name], letter) for n in nodes}
    gpu_head = "GPUS [socket 0|socket 1|...]"
    gpu_w = max([len(gpu_head)] + [len(f) for f in fields.values()])
    rows.append(f"{'NODE':<{name_w}}  {'STATE':<{state_w}}  {gpu_head:<{gpu_w}}  "
                f"{'CPUS FREE':>9}  {'MEM FREE':>11}")
    for n in sorted(nodes, key=lambda n: n.name):
        cpus = f"{max(n.cpus - n.cpus_alloc, 0)}/{n.cpus}"
        mem = f"{_gib(max(n.memory_mb - n.memory_alloc_mb, 0))}/{_gib(n.memory_mb)}"
        rows.append(f"{n.name:<{name_w}}  {_state_label(n):<{state_w}}  {fields[n.name]:<{gpu_w}}  "
                    f"{cpus:>9}  {mem:>11}".rstrip())
    rows.append("")
    jobs_of: dict[str, list[str]] = {}
    for (_node, _i), (user, job) in sorted(owners.items()):
        if job not in jobs_of.setdefault(user, []):
            jobs_of[user].append(job)
    for u in users:
        ids = jobs_of.get(u, [])
        shown = ",".join(ids[:8]) + (f",... ({len(ids)} jobs)" if len(ids) > 8 else "")
        rows.append(f"{letter[u]} {u} ({held[u]} GPUs; jobs {shown})")
    rows.append(f"{FREE} free  {UNAVAILABLE} unavailable (drained, down, power-saved)  "
                f"{UNKNOWN_JOB} busy, job not listed  {OTHERS} one of further users")
    return rows


def _summary_rows(nodes: Sequence[NodeRecord]) -> list[str]:
    groups: dict[tuple[str, str, int, int], list[str]] = {}
    for n in nodes:
        availability = node_availability(n.state)
        label = "available" if availability == "ok" else availability
        if availability == "unavailable":
            words = state_words(n.state) & {"DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "POWERED_DOWN",
                                             "NOT_RESPONDING", "POWERING_UP", "POWERING_DOWN", "FUTURE"}
            label = "+".join(sorted(words)) or "unavailable"
        totals: dict[str, list[int]] = {}
        for item in n.gres:
            ku = unit_of(item)
            if ku and ku[1] in ("gpu", "mig"):
                totals.setdefault(ku[0], [0, 0])[0] += item.count
        for item in n.gres_used:
            ku = unit_of(item)
            if ku and ku[0] in totals:
                totals[ku[0]][1] += item.count
        for key, (total, used) in totals.items():
            free = 0 if availability == "unavailable" else max(total - used, 0)
            groups.setdefault((key, label, free, total), []).append(n.name)
    rows = [f"{'TYPE':<16} {'NODES STATE':<22} {'FREE/NODE':>9} {'NODES':>6}  HOSTS"]
    for (key, label, free, total), names in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], -kv[0][2])):
        hosts = compress_hostlist(sorted(names))
        if len(hosts) > HOSTLIST_WIDTH:
            hosts = hosts[:HOSTLIST_WIDTH - 3] + "..."
        bar = "#" * round(10 * free / total) if total else ""
        rows.append(f"{key:<16} {label:<22} {f'{free}/{total}':>9} {len(names):>6}  {hosts}  {bar}".rstrip())
    return rows


def _fabric_table(summary: Summary) -> list[str]:
    """Free nodes and units per leaf switch and block, and the largest job startable within one
    (``fabric`` of the summary; nothing without a topology plugin)."""
    fab = summary.get("fabric")
    if not fab:
        return []
    lines = [f"{'fabric unit':<24} {'nodes':>5} {'free nodes':>10}  free units"]
    for u in fab["units"]:
        free = " ".join(f"{k}:{n}" for k, n in u["free"].items()) or "-"
        lines.append(f"{u['kind'] + ' ' + u['name']:<24} {u['nodes']:>5} {u['free_nodes']:>10}  {free}")
    for key, by_kind in fab["largest_startable_one_unit"].items():
        parts = [f"one {kind}: {v['units']} ({v['name']}, {v['nodes']} free node{'s' if v['nodes'] != 1 else ''})"
                 for kind, v in by_kind.items()]
        lines.append(f"largest {key} job startable within " + "; ".join(parts))
    return [*lines, ""]


def render(nodes: Sequence[NodeRecord], jobs: Sequence[JobGres], summary: Summary,
           sockets: Mapping[str, Mapping[int, int]] | None = None, max_rows: int = MAX_ROWS,
           title: str = "slurm-gpu cluster") -> str:
    """The picture: the per-type table, then one row per node (<= ``max_rows`` nodes) or the summary."""
    gpu_nodes = [n for n in nodes if any(i.name == "gpu" for i in n.gres)]
    head = (f"{title}: {len(nodes)} nodes ({len(gpu_nodes)} with GPUs), "
            f"{summary['nodes']['unavailable']} unavailable, {summary['nodes']['planned']} planned by backfill")
    lines = [head, "", *_summary_table(summary), "", *_fabric_table(summary)]
    if len(gpu_nodes) <= max_rows:
        lines += _node_rows(gpu_nodes, jobs, sockets or {})
    else:
        lines += [f"{len(gpu_nodes)} GPU nodes, summarised (more than {max_rows}; --full shows one row per node):",
                  *_summary_rows(gpu_nodes)]
    return "\n".join(lines) + "\n"


__all__ = ["render", "node_cells", "gpu_owners", "gpu_sockets", "MAX_ROWS"]
