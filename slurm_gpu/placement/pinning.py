# SPDX-License-Identifier: Apache-2.0
"""Split a job's CPU allocation among the workers a launcher forks (torchrun, accelerate,
deepspeed, mpirun), one share per worker, local to the worker's GPU. Pure: data in, data out.

The rules (docs/pinning.md):

- the allocation is what the process may use (the job step's cpuset, else its affinity at start);
- ``CUDA_VISIBLE_DEVICES`` gets one order for every worker of the node (``keep`` the given order,
  or ``socket``: socket-major, stable), and worker ``LOCAL_RANK`` drives entry ``LOCAL_RANK % n``;
- the allocated CPUs local to a GPU are split evenly, in contiguous blocks of whole cores, among
  the workers whose GPUs are local to them ("pools");
- a worker whose GPU has no allocated local CPU gets an even share of the allocated CPUs local to
  no worker's GPU, or else a share of the pool with the most CPUs per worker, with a warning;
  allocated CPUs local to no worker go to the pools with the fewest CPUs per worker;
- masks are disjoint and cover the allocation; only with fewer CPUs than workers do workers share
  (round robin, local CPUs first, with a warning).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from slurm_gpu.cpulist import format_cpulist, parse_cpulist
from slurm_gpu.digits import is_digits
from slurm_gpu.plain import Record, record

if TYPE_CHECKING:  # the type only: topology stays out of slurm-gpu-pin's import path
    from slurm_gpu.topology.model import Topology

ORDERS = ("keep", "socket")
# (rank variable, size variable), first found wins: torchrun/accelerate/deepspeed, Open MPI,
# MPICH/Hydra, Slurm's srun.
# (DeepSpeed's launcher sets LOCAL_SIZE, torchrun LOCAL_WORLD_SIZE.)
RANK_VARIABLES = (
    ("LOCAL_RANK", ("LOCAL_WORLD_SIZE", "LOCAL_SIZE")),
    ("OMPI_COMM_WORLD_LOCAL_RANK", ("OMPI_COMM_WORLD_LOCAL_SIZE",)),
    ("MPI_LOCALRANKID", ("MPI_LOCALNRANKS",)),
    ("SLURM_LOCALID", ()),  # the size: SLURM_STEP_TASKS_PER_NODE
)


class PinError(ValueError):
    """The inputs cannot be planned; the message is one line for the user."""


@record
class WorkerPin(Record):
    local_rank: int
    gpu: str | None  # this worker's CUDA_VISIBLE_DEVICES entry (the device it should use: cuda:LOCAL_RANK % n)
    gpu_id: int | None  # its global id (gres.conf index, SLURM_STEP_GPUS), None when unknown
    cpus: tuple[int, ...]
    mem_nodes: tuple[int, ...]
    cuda_visible_devices: str  # the same for every worker of the node
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"local_rank": self.local_rank, "gpu": self.gpu, "gpu_id": self.gpu_id,
                "cpus": format_cpulist(self.cpus), "mem_nodes": list(self.mem_nodes),
                "cuda_visible_devices": self.cuda_visible_devices, "warnings": list(self.warnings)}


@record
class NodePins(Record):
    workers: tuple[WorkerPin, ...]
    cuda_visible_devices: str
    warnings: tuple[str, ...] = ()  # about the node as a whole (e.g. fewer CPUs than workers)


@record
class Locality(Record):
    """What the planner needs from a topology (OS cpu ids throughout)."""

    gpu_cpus: Mapping[int, Collection[int]]  # GPU index -> cpus local to it
    cpu_core: Mapping[int, int]  # cpu -> core id (SMT siblings share one)
    cpu_numa: Mapping[int, int]  # cpu -> NUMA node
    gpu_socket: Mapping[int, int]  # GPU index -> socket (only GPUs on one socket)
    gpu_uuid: Mapping[str, int]  # UUID -> GPU index, for CUDA_VISIBLE_DEVICES=GPU-...


def locality_from_topology(topo: Topology) -> Locality:
    """From a :class:`slurm_gpu.topology.model.Topology`."""
    gpus = topo.gpus
    gpu_cpus = {g.index: tuple(topo.gpu_cpus(g.index)) for g in gpus}
    cpu_socket = {c.os_id: c.socket for c in topo.cpus}
    gpu_socket = {}
    for i, cpus in gpu_cpus.items():
        sockets = {cpu_socket[c] for c in cpus if c in cpu_socket}
        if len(sockets) == 1:
            gpu_socket[i] = sockets.pop()
    return Locality(
        gpu_cpus=gpu_cpus,
        cpu_core={c.os_id: c.core for c in topo.cpus},
        cpu_numa={c.os_id: c.numa_node for c in topo.cpus if c.numa_node is not None},
        gpu_socket=gpu_socket,
        gpu_uuid={g.uuid: g.index for g in gpus if g.uuid},
    )


# -- reading the launcher's environment (a mapping is passed in: no os.environ here) -------------
def rank_from_env(env: Mapping[str, str]) -> tuple[int, int | None, str] | None:
    """(local rank, local world size or None, the variable it came from); None when no launcher set
    one. PinError on a value that is not a number."""
    for rank_var, size_vars in RANK_VARIABLES:
        if env.get(rank_var, "") != "":
            rank = _int(env[rank_var], rank_var)
            size = next((_int(env[v], v) for v in size_vars if env.get(v, "") != ""), None)
            if rank_var == "SLURM_LOCALID":
                size = _slurm_tasks_here(env)
            return rank, size, rank_var
    return None


def _slurm_tasks_here(env: Mapping[str, str]) -> int | None:
    text = env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE") or ""
    head = text.split(",")[0].split("(")[0]
    return int(head) if is_digits(head) else None


def _int(text: str, name: str) -> int:
    if not is_digits(text.strip()):
        raise PinError(f"{name}={text!r} is not a non-negative integer")
    return int(text)


def gpus_from_env(env: Mapping[str, str], loc: Locality | None = None) -> list[tuple[str, int | None]]:
    """The node's visible GPUs as (CUDA_VISIBLE_DEVICES entry, global id), in the given order.

    Global ids come from SLURM_STEP_GPUS / SLURM_JOB_GPUS, mapped by position onto the entries of
    CUDA_VISIBLE_DEVICES (device cgroups may renumber those from 0). Without them an integer entry
    is its own id and a ``GPU-...`` UUID is looked up in the topology. Without CUDA_VISIBLE_DEVICES
    every GPU of the topology is visible, in index order."""
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    ids_text = env.get("SLURM_STEP_GPUS") or env.get("SLURM_JOB_GPUS") or ""
    if cvd is None:
        if ids_text:
            return [(str(i), i) for i in _ids(ids_text, "SLURM_JOB_GPUS")]
        return [(str(i), i) for i in sorted(loc.gpu_cpus)] if loc else []
    entries = [e.strip() for e in cvd.split(",") if e.strip()]
    if ids_text:
        ids = _ids(ids_text, "SLURM_STEP_GPUS/SLURM_JOB_GPUS")
        if len(ids) == len(entries):
            return list(zip(entries, ids, strict=True))
    uuids = loc.gpu_uuid if loc else {}
    return [(e, int(e) if is_digits(e) else uuids.get(e)) for e in entries]


def _ids(text: str, name: str) -> list[int]:
    if all(is_digits(p.strip()) for p in text.split(",")):
        return [int(p) for p in text.split(",")]
    try:
        return list(parse_cpulist(text))
    except ValueError:
        raise PinError(f"{name}={text!r} is not a list of GPU ids") from None


# -- the plan -----------------------------------------------------------------------------------
def order_gpus(gpus: Sequence[tuple[str, int | None]], order: str,
               gpu_socket: Mapping[int, int]) -> list[tuple[str, int | None]]:
    """``keep``: as given; ``socket``: stable sort by the GPU's socket (unknown sockets last)."""
    if order not in ORDERS:
        raise PinError(f"--order {order!r}: expected one of {', '.join(ORDERS)}")
    if order == "keep":
        return list(gpus)
    big = 1 << 30
    return sorted(gpus, key=lambda g: big if g[1] is None else gpu_socket.get(g[1], big))


def plan_worker_pins(allocated_cpus: Collection[int], gpu_local_cpus: Mapping[int, Collection[int]],
                     cvd_gpus: Sequence[int | tuple[str, int | None]], local_rank: int, local_world_size: int,
                     **kw: object) -> WorkerPin:
    """The pin of one worker; see :func:`plan_node_pins` for the arguments."""
    if not 0 <= local_rank < local_world_size:
        raise PinError(f"local rank {local_rank} is outside 0..{local_world_size - 1} (local world size "
                       f"{local_world_size})")
    node = plan_node_pins(allocated_cpus, gpu_local_cpus, cvd_gpus, local_world_size, **kw)  # type: ignore[arg-type]
    return node.workers[local_rank]


def plan_node_pins(allocated_cpus: Collection[int], gpu_local_cpus: Mapping[int, Collection[int]],
                   cvd_gpus: Sequence[int | tuple[str, int | None]], local_world_size: int, *,
                   cpu_core: Mapping[int, int] | None = None, cpu_numa: Mapping[int, int] | None = None,
                   gpu_socket: Mapping[int, int] | None = None, order: str = "keep") -> NodePins:
    """Every worker's pin on this node.

    ``allocated_cpus``: OS cpu ids the workers may use; ``gpu_local_cpus``: global GPU id -> its
    local cpus; ``cvd_gpus``: the visible GPUs in CUDA_VISIBLE_DEVICES order, as global ids or
    (entry, global id or None); ``cpu_core``/``cpu_numa``: SMT siblings and NUMA nodes when known."""
    alloc = sorted(set(allocated_cpus))
    if not alloc:
        raise PinError("the allocation is empty: no CPU to pin to")
    if local_world_size < 1:
        raise PinError(f"local world size {local_world_size}: expected at least 1 worker")
    gpus = order_gpus([(str(g), g) if isinstance(g, int) else g for g in cvd_gpus], order, gpu_socket or {})
    cvd = ",".join(e for e, _ in gpus)
    n = local_world_size
    own = [gpus[w % len(gpus)] if gpus else None for w in range(n)]
    alloc_set = set(alloc)
    local: list[set[int]] = []
    for g in own:
        gid = None if g is None else g[1]
        local.append(set(gpu_local_cpus.get(gid, ())) & alloc_set if gid is not None else set())
    node_warnings: list[str] = []
    if len(alloc) < n:
        masks = _round_robin(alloc, local)
        node_warnings.append(f"only {len(alloc)} CPU(s) ({format_cpulist(alloc)}) for {n} workers: "
                             "workers share CPUs (round robin)")
    else:
        units = _units(alloc, cpu_core or {}, n)
        masks = _split(units, local)
    numa = cpu_numa or {}
    workers = []
    for w, cpus in enumerate(masks):
        pin = own[w]
        entry, gid = pin if pin is not None else (None, None)
        warn = []
        if entry is not None and (gid is None or gid not in gpu_local_cpus):
            warn.append(f"worker {w}: the locality of GPU {entry} is unknown; pinned to CPUs {format_cpulist(cpus)}")
        elif gid is not None and not local[w]:
            known = format_cpulist(gpu_local_cpus[gid]) or "none"
            warn.append(f"worker {w}: none of the allocated CPUs {format_cpulist(alloc)} is local to GPU {gid} "
                        f"(local: {known}); pinned to remote CPUs {format_cpulist(cpus)}")
        elif gid is not None and not local[w] & set(cpus):
            warn.append(f"worker {w}: the allocated CPUs local to GPU {gid} ({format_cpulist(local[w])}) are fewer "
                        f"than its workers and went to the others; pinned to remote CPUs {format_cpulist(cpus)}")
        mem = tuple(sorted({numa[c] for c in cpus if c in numa}))
        workers.append(WorkerPin(w, entry, gid, tuple(sorted(cpus)), mem, cvd, tuple(warn)))
    return NodePins(tuple(workers), cvd, tuple(node_warnings))


def _units(alloc: list[int], cpu_core: Mapping[int, int], n: int) -> list[tuple[int, ...]]:
    """Whole cores (allocated SMT siblings together), sorted by lowest cpu; single cpus when there
    are fewer cores than workers or the cores are unknown."""
    by_core: dict[object, list[int]] = {}
    for c in alloc:
        by_core.setdefault(cpu_core.get(c, ("cpu", c)), []).append(c)
    units = sorted(tuple(v) for v in by_core.values())
    if len(units) < n:
        units = [(c,) for c in alloc]
    return units


def _split(units: list[tuple[int, ...]], local: list[set[int]]) -> list[list[int]]:
    """Assign every unit to one worker; each worker gets >= 1 unit (len(units) >= workers)."""
    n = len(local)
    key = [frozenset(w for w in range(n) if local[w] & set(u)) for u in units]
    parent = list(range(n))

    def find(w: int) -> int:
        while parent[w] != w:
            parent[w] = parent[parent[w]]
            w = parent[w]
        return w

    for k in key:
        ws = sorted(k)
        for w in ws[1:]:
            parent[find(w)] = find(ws[0])
    pools: dict[int, tuple[list[int], list[int]]] = {}  # root -> (workers, unit indices)
    for i, k in enumerate(key):
        if k:
            pools.setdefault(find(min(k)), ([], []))[1].append(i)
    for w in range(n):
        if find(w) in pools:
            pools[find(w)][0].append(w)
    comps = [list(p) for p in sorted(pools.values(), key=lambda p: p[1][0])]
    homeless = [w for w in range(n) if find(w) not in pools]  # GPU without an allocated local cpu
    for comp in comps:  # more workers than units in a pool: the last ones look elsewhere
        ws, us = comp
        if len(us) < len(ws):
            homeless += ws[len(us):]
            del ws[len(us):]
    homeless.sort()
    spare = [i for i, k in enumerate(key) if not k]  # allocated, local to no worker's GPU
    if homeless and spare:
        take = homeless[:len(spare)]
        comps.append([take, spare])
        homeless, spare = homeless[len(take):], []
    for w in homeless:  # join the pool with the most units per worker (it has one to give)
        best = max((c for c in comps if len(c[1]) > len(c[0])), key=lambda c: len(c[1]) / len(c[0]))
        best[0].append(w)
    for i in spare:  # units nobody is local to: to the pool with the fewest units per worker
        best = min(comps, key=lambda c: len(c[1]) / len(c[0]))
        best[1].append(i)
    masks: list[list[int]] = [[] for _ in range(n)]
    for ws, us in comps:
        for w, got in _fill(ws, sorted(us), units, local).items():
            masks[w] = sorted(c for i in got for c in units[i])
    return masks


def _fill(ws: list[int], us: list[int], units: list[tuple[int, ...]], local: list[set[int]]) -> dict[int, list[int]]:
    """Even targets (q or q+1 units); local workers take contiguous local units first, the others
    take what is left; leftovers go to the emptiest worker local to them (else the emptiest)."""
    q, r = divmod(len(us), len(ws))
    locals_first = sorted(ws, key=lambda w: (not any(local[w] & set(units[i]) for i in us), w))
    target = {w: q + (1 if k < r else 0) for k, w in enumerate(sorted(ws))}
    got: dict[int, list[int]] = {w: [] for w in ws}
    free = list(us)
    for w in locals_first:
        mine = [i for i in free if local[w] & set(units[i])] or free
        got[w] = mine[:target[w]]
        taken = set(got[w])
        free = [i for i in free if i not in taken]
    for i in free:
        cands = [w for w in ws if local[w] & set(units[i])] or ws
        got[min(cands, key=lambda w: (len(got[w]), w))].append(i)
    return got


def _round_robin(alloc: list[int], local: list[set[int]]) -> list[list[int]]:
    """Fewer cpus than workers: every cpu gets a worker (local first), then the remaining workers
    take the least used of their local cpus (else of all)."""
    n = len(local)
    masks: list[list[int]] = [[] for _ in range(n)]
    use = {c: 0 for c in alloc}
    for c in alloc:
        idle = [w for w in range(n) if not masks[w]]
        w = next((w for w in idle if c in local[w]), idle[0])
        masks[w] = [c]
        use[c] += 1
    for w in range(n):
        if not masks[w]:
            c = min(sorted(local[w]) or alloc, key=lambda c: (use[c], c))
            masks[w] = [c]
            use[c] += 1
    return masks
