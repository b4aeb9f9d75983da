# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu why JOBID``, the decision (pure: parsed records and the policy in, data out).

Inputs are what the one Slurm adapter read, parsed by :mod:`slurm_gpu.slurm.records`: the job's record
and every job's (squeue's JSON in scontrol's field names: the user's GPUs in use under a QOS, the jobs it
depends on), ``scontrol show node -o`` and ``scontrol show partition -o`` records, and the QOS limits
from ``sacctmgr -nP show qos`` (:data:`QOS_FORMAT`, parsed here by :func:`parse_qos`: records.py has no
sacctmgr parser). :func:`explain` returns a :class:`Why`; the CLI prints it.

Counts are read from TRES (``gres/gpu:h100=2``), the same on 22.05 and 24.11 (``TRES=`` / ``ReqTRES=``
/ ``AllocTRES=``, :func:`slurm_gpu.slurm.records.job_tres`); the GPU type of an untyped count comes
from ``TresPerNode``/``TresPerJob`` in either spelling (``gres:gpu:h100:2``, ``gres/gpu:h100:2``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

from slurm_gpu.cluster.why_reasons import ReasonInfo, reason_info
from slurm_gpu.digits import is_digits
from slurm_gpu.plain import NamedTuple
from slurm_gpu.policy.model import Policy
from slurm_gpu.slurm.records import job_tres, parse_kv_line
from slurm_gpu.units import UnitError, format_time_minutes, parse_time_minutes

# sacctmgr -nP show qos format=... (the columns parse_qos reads, in this order)
QOS_FORMAT = "Name,MaxTRESPU,MaxTRES,MaxTRESPA,MaxTRESPerNode,GrpTRES,MaxWall"
_QOS_COLUMNS = ("name", "MaxTRESPerUser", "MaxTRESPerJob", "MaxTRESPerAccount", "MaxTRESPerNode", "GrpTRES",
                "MaxWall")
# node states whose GPUs a new job cannot get (the base state or any +FLAG)
_UNUSABLE = {"DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "MAINT", "RESERVED", "POWERED_DOWN",
             "POWERING_DOWN", "POWER_DOWN", "NOT_RESPONDING", "FUTURE", "INVALID", "INVALID_REG", "REBOOT_ISSUED",
             "REBOOT_REQUESTED", "UNKNOWN"}
# blockers that no other GPU request changes
NOT_RESOURCES = frozenset({"held", "dependency", "begin_time", "invalid", "partition_time_limit", "qos_time_limit",
                           "partition_limit"})
_RUNNING = {"RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "STAGE_OUT", "RESIZING", "SIGNALING"}
_GPU_ASK = re.compile(r"gres[:/]gpu(?::([A-Za-z0-9_.\-]+))?:([0-9]+)")


class Node(NamedTuple):
    """What a new job could still get on one node, per GPU type."""

    name: str
    state: str
    usable: bool
    partitions: tuple[str, ...]
    gpus: Mapping[str, int]  # type -> configured
    free: Mapping[str, int]  # type -> not allocated
    cpus_free: int
    mem_free_mb: int


class Ask(NamedTuple):
    """The job's GPU request: ``gpus`` in all, ``per_node`` on each of ``nodes`` nodes."""

    gpus: int
    gpu_type: str | None
    nodes: int
    per_node: int
    cpus_per_gpu: int
    mem_per_gpu_mb: int
    time_min: int | None


class Limit(NamedTuple):
    """The limit that holds the job: ``requested + in_use`` exceeds ``limit`` by ``over_by``."""

    source: str  # "qos" (live sacctmgr), "policy" (the site policy), "partition" (live scontrol)
    name: str
    field: str  # MaxTRESPerUser, MaxTRESPerJob, GrpTRES, MaxWall, MaxTime, ...
    what: str  # "gres/gpu", "gres/gpu:h100", "time"
    limit: int | None  # GPUs, or minutes for time; None: not known
    in_use: int
    requested: int
    over_by: int | None
    text: str


class Alternative(NamedTuple):
    gpus: int
    gpu_type: str
    nodes: tuple[str, ...]  # where it would start now
    options: tuple[str, ...]  # gpusub options that ask for it
    text: str
    slurm_estimate: str | None = None  # ``sbatch --test-only``'s start time or refusal, when asked for


def test_only_options(why: Why, alt: Alternative) -> list[str]:
    """sbatch options for Slurm's own estimate of an alternative: the job's partition, QOS and time."""
    opts = [f"--partition={why.partition}"] if why.partition else []
    opts += [f"--qos={why.qos}"] if why.qos else []
    if why.ask is not None and why.ask.time_min is not None:
        opts.append(f"--time={why.ask.time_min}")
    return opts + list(alt.options)


class Why(NamedTuple):
    job_id: str
    state: str
    pending: bool
    reason: str | None
    blocker: str  # ReasonInfo.kind, "none" when not pending
    explanation: str
    limit: Limit | None = None
    ask: Ask | None = None
    partition: str = ""
    qos: str = ""
    user: str = ""
    start_estimate: str | None = None
    sched_nodes: str | None = None
    could_run_on: tuple[str, ...] = ()
    free_now: Mapping[str, Mapping[str, int]] = MappingProxyType({})
    alternatives: tuple[Alternative, ...] = ()
    advice: tuple[str, ...] = ()


# ---- small parsers (records.py has none for these) ----------------------------------------------

def parse_records(text: str, first_key: str) -> list[dict[str, str]]:
    """``scontrol show partition|node -o`` (one record per line; they hold no user text) -> records. Jobs
    come from :func:`slurm_gpu.slurm.records.read_jobs`, never from scontrol's text."""
    if first_key == "JobId":
        raise ValueError("job records are read from squeue's JSON (slurm_gpu.slurm.records.read_jobs)")
    return [parse_kv_line(ln.strip(), first_wins=True) for ln in text.split("\n") if ln.startswith(f"{first_key}=")]


def parse_qos(text: str) -> dict[str, dict[str, str]]:
    """``sacctmgr -nP show qos format=`` :data:`QOS_FORMAT` -> QOS name -> {column: value}."""
    out: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        cells = line.strip().split("|")
        if len(cells) >= len(_QOS_COLUMNS) and cells[0]:
            out[cells[0]] = dict(zip(_QOS_COLUMNS, cells, strict=False))
    return out


def tres_map(text: str | None) -> dict[str, str]:
    return dict(i.split("=", 1) for i in (text or "").split(",") if "=" in i)


def _int(text: str | None, default: int = 0) -> int:
    m = re.match(r"[0-9]+", text or "")
    return int(m.group()) if m else default


def _minutes(text: str | None) -> int | None:
    try:
        return parse_time_minutes(text or "")
    except UnitError:
        return None


def _gpu_counts(tres: Mapping[str, str]) -> dict[str, int]:
    return {k.split(":", 1)[1]: _int(v) for k, v in tres.items() if k.startswith("gres/gpu:")}


def node_of(rec: Mapping[str, str]) -> Node:
    """One ``scontrol show node -o`` record -> :class:`Node` (counts from CfgTRES/AllocTRES)."""
    gpus = _gpu_counts(tres_map(rec.get("CfgTRES")))
    if not gpus:  # untyped TRES: the types of Gres= (gpu:h100:8(S:0-1))
        for m in re.finditer(r"gpu:([A-Za-z0-9_.\-]+):([0-9]+)", rec.get("Gres", "")):
            gpus[m.group(1)] = gpus.get(m.group(1), 0) + int(m.group(2))
    alloc = tres_map(rec.get("AllocTRES"))
    used = _gpu_counts(alloc)
    if not used and _int(alloc.get("gres/gpu")) and len(gpus) == 1:
        used = {next(iter(gpus)): _int(alloc.get("gres/gpu"))}
    state = rec.get("State", "UNKNOWN")
    words = set(re.split(r"[+]", state.rstrip("*~#!%$@^-").upper()))
    usable = not (words & _UNUSABLE) and not state.endswith(("*", "~", "#", "!", "%"))
    cpus = _int(rec.get("CPUEfctv") or rec.get("CPUTot")) - _int(rec.get("CPUAlloc"))
    mem = _int(rec.get("RealMemory")) - _int(rec.get("AllocMem"))
    return Node(rec.get("NodeName", "?"), state, usable, tuple(p for p in rec.get("Partitions", "").split(",") if p),
                gpus, {t: max(n - used.get(t, 0), 0) for t, n in gpus.items()}, max(cpus, 0), max(mem, 0))


def ask_of(job: Mapping[str, str], partition: Mapping[str, str] | None = None) -> Ask:
    """The job's GPU request; CPUs and memory per GPU from CpusPerTres/MemPerTres, else the partition's
    DefCpuPerGPU/DefMemPerGPU (what Slurm applies at allocation)."""
    tres = job_tres(job)
    count = _int(tres.get("gres/gpu"))
    typed = _gpu_counts(tres)
    gpu_type = max(typed, key=lambda t: typed[t]) if typed else None
    for key in ("TresPerNode", "TresPerJob", "TresPerSocket", "TresPerTask"):
        m = _GPU_ASK.search(job.get(key, ""))
        if m and gpu_type is None:
            gpu_type = m.group(1)
        if m and not count and key in ("TresPerNode", "TresPerJob"):
            count = int(m.group(2)) * (_int(job.get("NumNodes"), 1) if key == "TresPerNode" else 1)
    nodes = max(_int(job.get("NumNodes"), 1), 1)
    defaults = tres_map((partition or {}).get("JobDefaults"))
    cpg = re.search(r"gpu:([0-9]+)", job.get("CpusPerTres", ""))
    mpg = re.search(r"gpu:([0-9]+)", job.get("MemPerTres", ""))
    return Ask(count, gpu_type, nodes, -(-count // nodes) if count else 0,
               int(cpg.group(1)) if cpg else _int(defaults.get("DefCpuPerGPU"), 1),
               int(mpg.group(1)) if mpg else _int(defaults.get("DefMemPerGPU")),
               _minutes(job.get("TimeLimit")))


# ---- what holds it ----------------------------------------------------------------------------

def _running(jobs: Iterable[Mapping[str, str]], **match: str) -> list[Mapping[str, str]]:
    return [j for j in jobs if (j.get("JobState") or "").split()[0] in _RUNNING
            and all(j.get(k) == v for k, v in match.items())]


def _gpus_of(jobs: Iterable[Mapping[str, str]], key: str) -> int:
    return sum(_int(job_tres(j).get(key)) for j in jobs)


def _gpu_limit(info: ReasonInfo, job: Mapping[str, str], ask: Ask, jobs: Sequence[Mapping[str, str]],
               qos: Mapping[str, Mapping[str, str]] | None, policy: Policy | None) -> Limit | None:
    """The QOS GPU limit behind a QOSMaxGRES*/QOSGrpGRES reason, with how far the job is over it."""
    name = job.get("QOS", "")
    field = {"user": "MaxTRESPerUser", "job": "MaxTRESPerJob", "account": "MaxTRESPerAccount",
             "node": "MaxTRESPerNode", "group": "GrpTRES"}.get(info.per, "")
    peers = {"user": dict(UserId=job.get("UserId", ""), QOS=name), "account": dict(Account=job.get("Account", ""),
             QOS=name), "group": dict(QOS=name)}.get(info.per)
    live = (qos or {}).get(name)
    limits: dict[str, int] = {}
    source = "qos"
    if live is not None:
        limits = {k: _int(v) for k, v in tres_map(live.get(field)).items() if k.startswith("gres/gpu")}
    elif policy is not None and (pq := policy.qos_named(name)) is not None:
        value = {"user": pq.max_gpus_per_user, "job": pq.max_gpus_per_job}.get(info.per)
        limits, source = ({"gres/gpu": value} if value is not None else {}), "policy"
    best: Limit | None = None
    for key, limit in limits.items():
        if key != "gres/gpu" and key != f"gres/gpu:{ask.gpu_type}":
            continue
        requested = ask.per_node if info.per == "node" else _int(job_tres(job).get(key)) or ask.gpus
        in_use = _gpus_of(_running(jobs, **peers), key) if peers is not None else 0
        over = requested + in_use - limit
        who = {"user": f"per user ({job.get('UserId', '?').split('(')[0]} has {in_use} in use)",
               "account": f"per account ({in_use} in use)", "group": f"for the whole QOS ({in_use} in use)",
               "job": "per job", "node": "per node"}.get(info.per, "")
        text = (f"QOS {name} allows {limit} {key} {who}; the job asks for {requested}"
                + (f": {over} over" if over > 0 else ""))
        cand = Limit(source, name, field, key, limit, in_use, requested, over, text)
        if best is None or (cand.over_by or 0) > (best.over_by or 0):
            best = cand
    if best is None:
        return Limit(source, name, field, "gres/gpu", None, 0, ask.gpus, None,
                     f"QOS {name}: limit {field} on GPUs (its value could not be read)")
    return best


def _time_limit(kind: str, job: Mapping[str, str], ask: Ask, partition: Mapping[str, str] | None,
                qos: Mapping[str, Mapping[str, str]] | None, policy: Policy | None) -> Limit | None:
    if kind == "partition_time_limit":
        name = job.get("Partition", "").split(",")[0]
        limit = _minutes((partition or {}).get("MaxTime"))
        source = "partition"
        if partition is None and policy is not None and (pp := policy.partition(name)) is not None:
            limit, source = pp.max_time_min, "policy"
        field = "MaxTime"
    else:
        name = job.get("QOS", "")
        live = (qos or {}).get(name)
        limit, source = (_minutes(live.get("MaxWall")), "qos") if live else (None, "qos")
        if live is None and policy is not None and (pq := policy.qos_named(name)) is not None:
            limit, source = pq.max_wall_min, "policy"
        field = "MaxWall"
    asked = ask.time_min or 0
    over = asked - limit if limit is not None else None
    what = "partition" if field == "MaxTime" else "QOS"
    text = (f"{what} {name} allows {format_time_minutes(limit) if limit is not None else '?'}; the job asks for "
            f"{format_time_minutes(asked) if ask.time_min is not None else 'UNLIMITED'}"
            + (f": {format_time_minutes(over)} over" if over is not None and over > 0 else ""))
    return Limit(source, name, field, "time", limit, 0, asked, over, text)


# ---- where it could run, and what would start now -----------------------------------------------

def _fits(node: Node, gpu_type: str, k: int, ask: Ask) -> bool:
    return (node.usable and node.free.get(gpu_type, 0) >= k and node.cpus_free >= k * max(ask.cpus_per_gpu, 1)
            and node.mem_free_mb >= k * ask.mem_per_gpu_mb)


def _gpus_option(gpu_type: str, per_node: int, nodes: int) -> tuple[str, ...]:
    if nodes > 1:
        return (f"--nodes={nodes}", f"--gpus-per-node={gpu_type}:{per_node}")
    return (f"--gpus={gpu_type}:{per_node}",)


def alternatives(ask: Ask, nodes: Sequence[Node], types: Sequence[str], cap: int | None,
                 capped_type: str | None = None) -> tuple[Alternative, ...]:
    """Requests that would start now on free GPUs (at most as many nodes and GPUs as asked, at most
    ``cap`` GPUs in all when a limit holds; a typed limit caps ``capped_type`` only): per type the largest
    that fits; the same count of another type first, then the largest."""
    if not ask.gpus:
        return ()
    out: list[Alternative] = []
    order = [t for t in types if t == ask.gpu_type] + [t for t in types if t != ask.gpu_type]
    for gpu_type in order:
        limit = ask.gpus if cap is None or capped_type not in (None, gpu_type) else min(ask.gpus, cap)
        best: tuple[int, int, tuple[str, ...]] | None = None  # (GPUs in all, nodes, where)
        for n_nodes in range(ask.nodes, 0, -1):
            for k in range(min(ask.per_node if n_nodes == ask.nodes else limit, limit // n_nodes), 0, -1):
                where = tuple(n.name for n in nodes if _fits(n, gpu_type, k, ask))
                if len(where) >= n_nodes:
                    if best is None or k * n_nodes > best[0]:
                        best = (k * n_nodes, n_nodes, where)
                    break
        if best is None:
            continue
        total, n_nodes, where = best
        if (gpu_type, total, n_nodes) == (ask.gpu_type, ask.gpus, ask.nodes):
            continue  # the request as asked fits now
        per = total // n_nodes
        label = f"{total} {gpu_type}" + (f" ({per} on each of {n_nodes} nodes)" if n_nodes > 1 else "")
        text = f"{label} would start now on {', '.join(where[:8])}{' ...' if len(where) > 8 else ''}"
        out.append(Alternative(total, gpu_type, where, _gpus_option(gpu_type, per, n_nodes), text))
    same = [a for a in out if a.gpu_type != ask.gpu_type and a.gpus == ask.gpus]
    rest = [a for a in out if a not in same]
    return tuple(same + sorted(rest, key=lambda a: (-a.gpus, a.gpu_type != ask.gpu_type)))[:3]


def _types_for(part_names: Sequence[str], nodes: Sequence[Node], policy: Policy | None) -> list[str]:
    types: list[str] = []
    for n in nodes:
        types += [t for t in n.gpus if t not in types]
    for name in part_names:
        pp = policy.partition(name) if policy is not None else None
        if pp is not None and pp.gpu_types:
            types = [t for t in types if t in pp.gpu_types]
    return types


# ---- the whole answer -------------------------------------------------------------------------

def explain(job: Mapping[str, str], *, jobs: Sequence[Mapping[str, str]] = (),
            nodes: Sequence[Mapping[str, str]] = (), partitions: Sequence[Mapping[str, str]] = (),
            qos: Mapping[str, Mapping[str, str]] | None = None, policy: Policy | None = None) -> Why:
    """What holds one job (its ``scontrol show job -o`` record) and what would start now."""
    job_id = job.get("JobId", "?")
    state = (job.get("JobState") or "UNKNOWN").split()[0]
    raw_reason = job.get("Reason")
    reason = None if raw_reason in (None, "", "None", "(null)") else raw_reason
    user = job.get("UserId", "").split("(")[0]
    if state != "PENDING":
        where = job.get("NodeList") or ""
        text = f"job {job_id} is {state}" + (f" on {where}" if where and where != "(null)" else "") + (
            f" ({reason})" if reason else "") + ": not pending, nothing holds it"
        return Why(job_id, state, False, reason, "none", text, partition=job.get("Partition", ""),
                   qos=job.get("QOS", ""), user=user)
    part_names = [p for p in job.get("Partition", "").split(",") if p]
    parts = {p.get("PartitionName", ""): p for p in partitions}
    part = parts.get(part_names[0]) if part_names else None
    ask = ask_of(job, part)
    info = reason_info(reason or "None")
    in_parts = [node_of(n) for n in nodes if set(n.get("Partitions", "").split(",")) & set(part_names)]
    limit: Limit | None = None
    if info.kind in ("qos_gpu_limit",) and info.per:
        limit = _gpu_limit(info, job, ask, jobs, qos, policy)
    elif info.kind in ("partition_time_limit", "qos_time_limit"):
        limit = _time_limit(info.kind, job, ask, part, qos, policy)
    types = _types_for(part_names, in_parts, policy)
    cap = None if limit is None or limit.what == "time" or limit.limit is None else (
        max(limit.limit - limit.in_use, 0) if info.per != "node" else limit.limit * ask.nodes)
    typed = limit.what.split(":", 1)[1] if limit is not None and ":" in limit.what else None
    alts = () if info.kind in NOT_RESOURCES else alternatives(ask, in_parts, types, cap, typed)
    wanted = [ask.gpu_type] if ask.gpu_type else types
    could = tuple(n.name for n in in_parts if any(n.gpus.get(t, 0) >= ask.per_node for t in wanted)
                  and ask.per_node) or tuple(n.name for n in in_parts if not ask.gpus)
    free = {t: {n.name: n.free[t] for n in in_parts if n.usable and t in n.free} for t in types}
    advice = list(_advice(info, job, jobs, limit, ask, partitions, qos))
    start = job.get("StartTime")
    sched = job.get("SchedNodeList")
    return Why(job_id, state, True, reason, info.kind, info.text, limit=limit, ask=ask,
               partition=job.get("Partition", ""), qos=job.get("QOS", ""), user=user,
               start_estimate=None if start in (None, "Unknown", "N/A", "None") else start,
               sched_nodes=None if sched in (None, "(null)", "") else sched, could_run_on=could, free_now=free,
               alternatives=alts, advice=tuple(advice))


def topology_advice(job: Mapping[str, str]) -> Iterable[str]:
    """A resources wait of a job that asks for network locality: 22.05-24.11 print Resources while it waits
    for its switches (tree) or a whole block (block); 26.05 prints its own topology reasons (TOPOLOGY_REASONS).
    The request is in squeue's JSON from 24.11 (required_switches, segment_size); 22.05's has neither."""
    switches, wait, segment = job.get("ReqSwitch"), job.get("Wait4Switch"), job.get("SegmentSize")
    if switches:
        bound = f"up to {format_time_minutes(-(-int(wait) // 60))}" if is_digits(wait) and int(wait) else \
            "up to Slurm's max_switch_wait"
        yield (f"it asks for its nodes under at most {switches} leaf switch{'es' if switches != '1' else ''} "
               f"(--switches) and waits {bound} for that; then Slurm starts it across switches")
    if segment:
        yield (f"it asks for --segment={segment}: each {segment} of its nodes in one block (topology/block); it "
               "waits until a block has that many free nodes")


def _advice(info: ReasonInfo, job: Mapping[str, str], jobs: Sequence[Mapping[str, str]], limit: Limit | None,
            ask: Ask, partitions: Sequence[Mapping[str, str]],
            qos: Mapping[str, Mapping[str, str]] | None) -> Iterable[str]:
    job_id = job.get("JobId", "?")
    if info.kind == "resources":
        yield from topology_advice(job)
    if info.kind == "held":
        yield (f"release it: scontrol release {job_id}" if "User" in (job.get("Reason") or "")
               else "an administrator holds it: ask them (scontrol release needs an operator)")
    if info.kind == "dependency":
        states = {j.get("JobId"): (j.get("JobState") or "?").split()[0] + (
            f" ({j['Reason']})" if j.get("Reason") not in (None, "None") else "") for j in jobs}
        dep = job.get("Dependency", "")
        for kind, ids in re.findall(r"(\w+):([0-9_:+*]+)", dep):
            for dep_id in re.findall(r"[0-9]+", ids.split("+")[0]):
                yield f"waits for job {dep_id} ({kind}), which is {states.get(dep_id, 'no longer known to Slurm')}"
        if "never" in info.text:
            yield f"it can never start: scancel {job_id} and submit it again without the dependency"
    if limit is not None and limit.what == "time" and limit.limit is not None:
        yield f"ask for --time={format_time_minutes(limit.limit)} or less"
        if limit.field == "MaxTime":
            longer = [p["PartitionName"] for p in partitions if (_minutes(p.get("MaxTime")) or 1 << 30)
                      >= (ask.time_min or 1 << 30) and p.get("PartitionName", "") not in job.get("Partition", "")]
            if longer:
                yield f"or a partition that allows {format_time_minutes(ask.time_min)}: --partition={longer[0]}"
    if limit is not None and limit.what.startswith("gres/gpu") and qos:
        yield from _other_qos(job, jobs, limit, partitions, qos)


def _other_qos(job: Mapping[str, str], jobs: Sequence[Mapping[str, str]], limit: Limit,
               partitions: Sequence[Mapping[str, str]], qos: Mapping[str, Mapping[str, str]]) -> Iterable[str]:
    """A QOS the job's partition admits whose same limit leaves room for the job."""
    allowed = {p.get("PartitionName"): p.get("AllowQos", "ALL") for p in partitions}.get(
        job.get("Partition", "").split(",")[0], "ALL")
    for name, q in qos.items():
        if name == limit.name or (allowed != "ALL" and name not in allowed.split(",")):
            continue
        peers = {"MaxTRESPerUser": dict(UserId=job.get("UserId", ""), QOS=name), "GrpTRES": dict(QOS=name),
                 "MaxTRESPerAccount": dict(Account=job.get("Account", ""), QOS=name)}.get(limit.field)
        in_use = _gpus_of(_running(jobs, **peers), limit.what) if peers is not None else 0
        room = _int(tres_map(q.get(limit.field)).get(limit.what), 1 << 30) - in_use
        if room >= limit.requested:
            yield (f"QOS {name} (allowed in partition {job.get('Partition', '').split(',')[0]}) has room for "
                   f"{limit.requested} {limit.what}: --qos={name}")
            return


__all__ = ["QOS_FORMAT", "Node", "Ask", "Limit", "Alternative", "Why", "parse_records", "parse_qos", "tres_map",
           "node_of", "ask_of", "alternatives", "explain", "NOT_RESOURCES",
           "test_only_options"]
