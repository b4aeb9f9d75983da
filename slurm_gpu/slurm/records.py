# SPDX-License-Identifier: Apache-2.0
"""The one home of the parsers of Slurm's records (pure: text in, data out). docs/records.md.

- jobs: squeue's JSON (``squeue --json``, both shapes: 22.05's openapi/v0.0.38 and data_parser/v0.0.42):
  :func:`read_jobs` -> :class:`JobRecord` per job (fields in scontrol's names, per-node allocations),
  each job read on its own; the only job reader, because a job's name, comment, paths and submit line
  are the user's text and scontrol's text prints them raw;
- one job's state without user text (``squeue -O``): :func:`squeue_format`, :func:`parse_squeue_job`;
- ``scontrol show node -d -o`` / ``show partition -o`` (no user text in them): :func:`parse_node_records`,
  :func:`parse_node_fields`, :func:`parse_kv_line`, :func:`partition_gpu_defaults`;
- ``sbatch --parsable`` stdout: :func:`parse_parsable`; ``sbatch --test-only`` stderr: :func:`parse_test_only`;
- ``sbatch --version``: :func:`parse_sbatch_version`; a client's stderr -> its one useful line: :func:`one_line`.

Texts are those the lab's 22.05.8 and 24.11.5 printed (tests/adapters/data holds them).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from slurm_gpu.cpulist import parse_cpulist
from slurm_gpu.digits import is_digits
from slurm_gpu.plain import NamedTuple
from slurm_gpu.slurm.release import parse_sbatch_version

# States in which a job may still run or run again; every other state is final.
# EXPEDITING: 25.11's expedited requeue (slurm.release.JOB_STATE_SINCE).
ACTIVE_STATES = frozenset({"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED",
                           "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED",
                           "PREEMPTED", "EXPEDITING"})


class SubmitResult(NamedTuple):  # NamedTuples: a frozen dataclass costs gpusub ~1 ms at import
    job_id: int
    cluster: str | None = None
    messages: str = ""  # what sbatch wrote to stderr on success (warnings, job_submit plugin messages)


class TestOnlyResult(NamedTuple):
    """What ``sbatch --test-only`` reported on stderr:
    ``Job N to start at T using P processors on nodes X in partition Y`` [+ ``Preempts: ...``]."""

    job_id: int | None
    start: str | None
    processors: int | None
    nodes: str | None
    partition: str | None
    preempts: tuple[int, ...] = ()
    message: str = ""


TestOnlyResult.__test__ = False  # type: ignore[attr-defined]  # not a pytest class (a NamedTuple body has fields only)


class JobState(NamedTuple):
    """One job as ``scontrol show job -o`` reports it (the fields gpusub --wait shows)."""

    job_id: int
    state: str  # PENDING RUNNING COMPLETED FAILED CANCELLED TIMEOUT ...
    reason: str | None = None
    start_time: str | None = None
    node_list: str | None = None
    run_time: str | None = None
    exit_code: int | None = None  # from ExitCode=RC:SIG
    exit_signal: int | None = None
    raw: Mapping[str, str] = MappingProxyType({})

    @property
    def finished(self) -> bool:
        return self.state not in ACTIVE_STATES


class NodeAlloc(NamedTuple):
    """What a job holds on one node (one ``Nodes=X CPU_IDs=… GRES=…`` line of ``scontrol show job -d``;
    a line naming several nodes gives one NodeAlloc per node)."""

    node: str
    cpu_ids: frozenset[int]
    gpu_idx: frozenset[int]
    gres: str = ""  # as printed: gpu:h100:2(IDX:4-5)


def one_line(stderr: str, fallback: str) -> str:
    """The most useful line of a Slurm client's stderr (its last ``error:``/``fatal:`` line)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for marker in ("fatal:", "error:"):
        picked = [ln for ln in lines if marker in ln]
        if picked:
            # sbatch: error: Batch job submission failed: X  ->  keep everything after the first "error: "
            return picked[-1].split(marker, 1)[1].strip()
    return lines[-1] if lines else fallback


def parse_kv_line(line: str, first_wins: bool = False) -> dict[str, str]:
    """One ``scontrol -o`` node or partition record: space separated ``Key=Value`` pairs (values may
    contain ``=``; a word without ``=`` continues the previous value, e.g. a node's ``Reason=`` text).
    ``first_wins``: a key printed again (inside free text) keeps its first value. Never for jobs: their
    records hold the user's text (:func:`read_jobs`)."""
    out: dict[str, str] = {}
    key: str | None = None
    for word in line.split(" "):
        if "=" in word and not word.startswith("="):
            key, _, value = word.partition("=")
            if first_wins and key in out:
                key = None  # a repeat and the words after it are the free text's, not a field
            else:
                out[key] = value
        elif key and word:
            out[key] += " " + word
    return out


def gpu_indices(gres: str) -> frozenset[int]:
    """``gpu:h100:2(IDX:0,4),gpu:a100:1(IDX:2)`` -> {0, 2, 4} (GPU items only; indices over
    :data:`MAX_GRES_INDEX` are no device's and are dropped with their item)."""
    idx: set[int] = set()
    for item in parse_gres_counts(gres):
        if item.name == "gpu" and item.idx:
            idx |= item.idx
    return frozenset(idx)


def job_tres(record: Mapping[str, str]) -> dict[str, str]:
    """A job record's TRES as ``{"cpu": "8", "mem": "64000M", "gres/gpu": "2", ...}``: what the job holds
    once allocated, else what it asks for. 22.05-23.x print one ``TRES=`` field (the request while
    pending, the allocation once running); 24.11 prints ``ReqTRES=`` and, once allocated, ``AllocTRES=``."""
    text = record.get("AllocTRES") or record.get("TRES") or record.get("ReqTRES") or ""
    if text in ("(null)", "None"):
        text = record.get("ReqTRES") or ""
    return dict(item.split("=", 1) for item in text.split(",") if "=" in item)


def parse_parsable(stdout: str) -> SubmitResult | None:
    """``sbatch --parsable`` stdout (``42`` or ``42;cluster``, last line) -> SubmitResult; None if no id."""
    text = stdout.strip()
    first = text.splitlines()[-1] if text else ""
    job, _, cluster = first.partition(";")
    job = job.strip()
    return SubmitResult(int(job), cluster.strip() or None) if is_digits(job) else None


def parse_test_only(stderr: str) -> TestOnlyResult:
    job_id = start = nodes = partition = None
    processors = None
    preempts: tuple[int, ...] = ()
    message = ""
    for line in stderr.splitlines():
        text = line.split(":", 1)[1].strip() if line.startswith("sbatch:") else line.strip()
        words = text.split()
        if len(words) >= 4 and words[0] == "Job" and "to start at" in text:
            message = text
            job_id = int(words[1]) if is_digits(words[1]) else None
            start = words[words.index("at") + 1]
            if "using" in words:
                value = words[words.index("using") + 1]
                processors = int(value) if is_digits(value) else None
            if "nodes" in words:
                nodes = words[words.index("nodes") + 1]
            if "partition" in words:
                partition = words[words.index("partition") + 1]
        elif text.startswith("Preempts:"):
            preempts = tuple(int(x) for x in text.split(":", 1)[1].replace(",", " ").split() if is_digits(x))
    return TestOnlyResult(job_id, start, processors, nodes, partition, preempts, message)


def exit_code(value: str | None) -> tuple[int | None, int | None]:
    """``ExitCode=3:0`` -> (3, 0); (None, None) when absent."""
    if not value or ":" not in value:
        return None, None
    rc, _, sig = value.partition(":")
    return (int(rc) if is_digits(rc) else None), (int(sig) if is_digits(sig) else None)


def job_state_of(job_id: int, rec: Mapping[str, str]) -> JobState:
    """A ``scontrol show job -o`` record (from :func:`parse_kv_line`) -> JobState."""
    rc, sig = exit_code(rec.get("ExitCode"))
    reason = rec.get("Reason")
    return JobState(job_id=job_id, state=(rec.get("JobState") or "UNKNOWN").split()[0],
                    reason=None if reason == "None" else reason, start_time=rec.get("StartTime"),
                    node_list=rec.get("NodeList"), run_time=rec.get("RunTime"), exit_code=rc, exit_signal=sig,
                    raw=dict(rec))


def parse_nodes(text: str) -> dict[str, dict[str, str]]:
    """``scontrol show node -o`` (one node per line) -> node name -> its fields (:func:`parse_node_fields`)."""
    return {rec["NodeName"]: rec for rec in parse_node_fields(text)}


def _record_lines(text: str, first_key: str) -> list[str]:
    """The one-line records of ``scontrol show X -o``: lines (split at "\\n" only: splitlines() also cuts
    at \\r, \\x1e, \\x85, U+2028 ...) that start with ``first_key=``."""
    head = f"{first_key}="
    return [line.rstrip("\r") for line in text.split("\n") if line.startswith(head)]


def parse_node_fields(text: str) -> list[dict[str, str]]:
    """``scontrol show node -o`` -> one dict per node. Node records hold no user text (their Reason,
    Comment and Features are the admin's); a key printed twice keeps its first value, which is Slurm's
    (free text such as Reason comes after the keys read here)."""
    return [parse_kv_line(line.strip(), first_wins=True) for line in _record_lines(text, "NodeName")]


# -- nodes and GRES (the cluster view) ------------------------------------------------------------

class GresCount(NamedTuple):
    """One item of a node's ``Gres=`` / ``GresUsed=`` or a job's ``GRES=``/``TresPer*=``:
    ``gpu:h100:8(S:0-1)``, ``gpu:h100:5(IDX:0-4)``, ``gpu:(null):4(IDX:0-3)``, ``shard:h100:16``, ``mps:400``.
    ``idx`` is None when the text names no indices (``IDX:N/A`` is the empty set). ``shares``: a shared
    GRES's (shard, mps) allocated/available count per GPU, as 23.02+ prints it (``shard:h100:5(3/4,2/4)``)."""

    name: str  # gpu, shard, mps, ...
    gres_type: str | None  # h100, a100_1g.10gb; None when untyped or "(null)"
    count: int  # type: ignore[assignment]  # Slurm's word; hides tuple.count, which nothing uses
    idx: frozenset[int] | None = None
    shares: tuple[tuple[int, int], ...] | None = None


_SUFFIX = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4}


def _count(text: str) -> int | None:
    if is_digits(text):
        return int(text)
    if len(text) > 1 and is_digits(text[:-1]) and text[-1].lower() in _SUFFIX:
        return int(text[:-1]) * _SUFFIX[text[-1].lower()]
    return None


MAX_GRES_INDEX = 65535  # an IDX beyond it is not a device index: the item keeps its count, without indices


def _indices(spec: str) -> frozenset[int] | None:
    if any(int(n) > MAX_GRES_INDEX for n in re.findall(r"[0-9]+", spec)):
        return None
    try:
        return frozenset(parse_cpulist(spec))
    except ValueError:
        return None


_SHARES = re.compile(r"(?:[0-9]+|-)/[0-9]+(?:,(?:[0-9]+|-)/[0-9]+)*\)?")


def _shares(paren: str) -> tuple[tuple[int, int], ...] | None:
    """``3/4,0/4)`` -> ((3, 4), (0, 4)); None for anything else or more entries than GPU indices. 26.05 prints
    ``-/4`` for a GPU allocated whole (measured on 26.05.5: ``shard:h100:7(3/4,-/4,-/4,-/4,4/4,-/4,-/4,0/4)``
    beside ``gpu:h100:5(IDX:1-3,5-6)``; 24.11 printed ``0/4`` there): none of its shards can be held, (4, 4)."""
    if not _SHARES.fullmatch(paren) or paren.count(",") > MAX_GRES_INDEX:
        return None
    pairs = [pair.split("/") for pair in paren.rstrip(")").split(",")]
    return tuple((int(b) if a == "-" else int(a), int(b)) for a, b in pairs)


@lru_cache(maxsize=4096)  # a cluster repeats a few spellings on every node and job; results are immutable
def parse_gres_counts(text: str) -> tuple[GresCount, ...]:
    """A GRES list as Slurm prints it, in both spellings of the ``gres:`` (22.05 job fields) and
    ``gres/`` (24.11) prefixes; ``(null)``, ``N/A`` and empty give (). Items without a count
    (``gpu:h100``) count 1; an item that is not ``name[:type][:count][(...)]`` is skipped."""
    if not text or text in ("(null)", "N/A", "None"):
        return ()
    items: list[GresCount] = []
    depth = 0
    start = 0
    parts: list[str] = []
    for i, ch in enumerate(text):  # split at commas outside parentheses: gpu:h100:2(IDX:0,4),mps:100
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    for part in parts:
        body, _, paren = part.strip().replace("(null)", "").partition("(")
        if body.startswith(("gres/", "gres:")):
            body = body[5:]
        bits = body.split(":")
        if not bits[0]:
            continue
        gtype: str | None = None
        count: int | None = 1
        if len(bits) == 2:
            count = _count(bits[1])
            if count is None:
                gtype, count = bits[1], 1
        elif len(bits) >= 3:
            gtype, count = bits[1], _count(bits[2])
        if count is None:
            continue
        idx = None
        if paren.startswith("IDX:"):
            spec = paren[4:].rstrip(")")
            idx = frozenset() if spec in ("", "N/A") else _indices(spec)
        shares = _shares(paren) if "/" in paren else None
        items.append(GresCount(bits[0], None if gtype in (None, "", "(null)") else gtype, count, idx, shares))
    return tuple(items)


class NodeRecord(NamedTuple):
    """One node of ``scontrol show node -d -o`` (22.05 and 24.11 print the same keys used here)."""

    name: str
    state: str  # IDLE, MIXED, ALLOCATED, IDLE+DRAIN, DOWN*+DRAIN, IDLE+POWERED_DOWN, IDLE+PLANNED ...
    partitions: tuple[str, ...]
    cpus: int  # CPUEfctv (22.05.8 and later) else CPUTot
    cpus_alloc: int
    memory_mb: int  # RealMemory
    memory_alloc_mb: int  # AllocMem
    sockets: int
    cores_per_socket: int
    gres: tuple[GresCount, ...]
    gres_used: tuple[GresCount, ...]
    reason: str = ""
    threads: int = 1  # ThreadsPerCore
    features: tuple[str, ...] = ()  # AvailableFeatures (what --constraint is checked against)


def _int(fields: Mapping[str, str], *keys: str) -> int:
    for key in keys:
        value = fields.get(key, "")
        if is_digits(value):
            return int(value)
    return 0


def node_record(fields: Mapping[str, str]) -> NodeRecord:
    """A ``scontrol show node -o`` record (from :func:`parse_kv_line`) -> NodeRecord."""
    parts = fields.get("Partitions", "")
    return NodeRecord(name=fields.get("NodeName", ""), state=fields.get("State", "UNKNOWN"),
                      partitions=tuple(p for p in parts.split(",") if p) if parts not in ("", "(null)") else (),
                      cpus=_int(fields, "CPUEfctv", "CPUTot"), cpus_alloc=_int(fields, "CPUAlloc"),
                      memory_mb=_int(fields, "RealMemory"), memory_alloc_mb=_int(fields, "AllocMem"),
                      sockets=_int(fields, "Sockets") or 1, cores_per_socket=_int(fields, "CoresPerSocket") or 1,
                      gres=parse_gres_counts(fields.get("Gres", "")),
                      gres_used=parse_gres_counts(fields.get("GresUsed", "")),
                      reason=fields.get("Reason", ""), threads=_int(fields, "ThreadsPerCore") or 1,
                      features=tuple(f for f in fields.get("AvailableFeatures", "").split(",")
                                     if f and f != "(null)"))


_NODE_KEYS = re.compile(r"(?:^| )(NodeName|State|Partitions|CPUTot|CPUEfctv|CPUAlloc|RealMemory|AllocMem|Sockets|"
                        r"CoresPerSocket|ThreadsPerCore|Gres|GresUsed|AvailableFeatures)=(\S*)")
_REASON = re.compile(r" Reason=(.*?)(?= [A-Za-z_/:]+=|$)")


class NodesRead(NamedTuple):
    nodes: tuple[NodeRecord, ...]
    problems: tuple[str, ...] = ()


def read_node_records(text: str) -> NodesRead:
    """``scontrol show node -d -o`` -> one NodeRecord per ``NodeName=`` line (split at "\\n" only). Reads
    only the keys NodeRecord holds, each at its first place (an admin's Reason text that spells a key
    comes after them); a record that cannot be read is left out and named in ``problems``."""
    out: list[NodeRecord] = []
    problems: list[str] = []
    for line in _record_lines(text, "NodeName"):
        try:
            fields: dict[str, str] = {}
            for key, value in _NODE_KEYS.findall(line):
                fields.setdefault(key, value)
            reason = _REASON.search(line)
            if reason:
                fields["Reason"] = reason.group(1)
            out.append(node_record(fields))
        except (ValueError, OverflowError, RecursionError) as exc:
            if len(problems) < 20:
                problems.append(f"node {line[9:9 + line[9:].find(' ')][:40] if ' ' in line[9:] else line[9:49]}: "
                                f"left out ({type(exc).__name__}: {str(exc)[:120]})")
    return NodesRead(tuple(out), tuple(problems))


def parse_node_records(text: str) -> list[NodeRecord]:
    """:func:`read_node_records`'s nodes."""
    return list(read_node_records(text).nodes)


def topology_of(nodes: Iterable[NodeRecord]) -> dict[str, tuple[int, int]]:
    """node -> (cores per socket, threads per core): what :func:`read_jobs` needs for CPU ids."""
    return {n.name: (n.cores_per_socket, n.threads) for n in nodes}


class JobGres(NamedTuple):
    """What the cluster view needs of one job of ``scontrol show job -d -o``: who, its GRES request per
    node (for the job mix) and the GPU indices it holds on each node (for the picture)."""

    job_id: str
    user: str
    state: str
    partition: str
    num_nodes: int
    request: tuple[GresCount, ...]  # per-node counts: TresPerNode, else TresPerJob / NumNodes
    held: tuple[tuple[str, tuple[GresCount, ...]], ...]  # (node, GRES with IDX) while allocated


JOB_GRES_KEYS = frozenset({"UserId", "JobState", "Partition", "NumNodes", "TresPerNode", "TresPerJob", "TRES",
                           "ReqTRES", "AllocTRES"})  # what job_gres reads: read_jobs(..., keys=JOB_GRES_KEYS)


def job_gres(job: JobRecord) -> JobGres:
    """One job record -> JobGres: its GRES request per node and, while allocated, the GRES (with
    indices) it holds on each node of its allocation."""
    fields = job.fields
    held = tuple((a.node, gres) for a in job.allocs if (gres := parse_gres_counts(a.gres)))
    # a pending job's NumNodes may be a range ("2-2", "2-4"): its minimum is what each node is asked for
    m = re.match(r"[0-9]{1,9}", fields.get("NumNodes", ""))
    nodes = (int(m.group(0)) if m else 0) or 1
    request = parse_gres_counts(fields.get("TresPerNode", ""))
    if not request:  # --gpus=N: per job, spread over its nodes
        request = tuple(item._replace(count=-(-item.count // nodes))
                        for item in parse_gres_counts(fields.get("TresPerJob", "")))
    if not request:  # per task and the rest: the job's TRES, typed items first, per node
        tres = [(k[5:].split(":", 1), v) for k, v in job_tres(fields).items()
                if k.startswith("gres/") and is_digits(v) and len(v) <= 9]
        typed = [(kt, v) for kt, v in tres if len(kt) == 2]
        chosen = typed or [(kt, v) for kt, v in tres if len(kt) == 1 and not any(t[0][0] == kt[0] for t in typed)]
        request = tuple(GresCount(kt[0], kt[1] if len(kt) == 2 else None, -(-int(v) // nodes)) for kt, v in chosen)
    user = fields.get("UserId", "").split("(", 1)[0]
    return JobGres(fields.get("JobId", ""), user, (fields.get("JobState") or "UNKNOWN").split()[0],
                   fields.get("Partition", ""), nodes, request, held)


def partition_gpu_defaults(text: str) -> dict[str, tuple[int, int]]:
    """``scontrol show partition -o`` -> partition -> (DefCpuPerGPU, DefMemPerGPU in MB) from its
    ``JobDefaults=DefCpuPerGPU=4,DefMemPerGPU=61440``; (1, 0) where the partition sets neither."""
    out: dict[str, tuple[int, int]] = {}
    for line in text.splitlines():
        if not line.startswith("PartitionName="):
            continue
        rec = parse_kv_line(line.strip())
        defaults = dict(item.split("=", 1) for item in rec.get("JobDefaults", "").split(",") if "=" in item)
        cpg, mpg = defaults.get("DefCpuPerGPU", ""), defaults.get("DefMemPerGPU", "")
        out[rec["PartitionName"]] = (int(cpg) if is_digits(cpg) else 1, int(mpg) if is_digits(mpg) else 0)
    return out


# -- job records: squeue's JSON, the one job reader -----------------------------------------------
#
# A job's name, comment, work dir, command, output paths, mail user and (26.05) submit line are the
# user's text, and ``scontrol show job`` prints them raw between the keys: a name can hold a line break,
# a whole ``JobId=…`` line or any ``Key=value``, and no text parser can tell them from Slurm's own
# (docs/records.md shows two such records). squeue's JSON escapes every string, so its structure is
# Slurm's alone. :func:`read_jobs` reads it into records in scontrol's own key names and spellings
# (``JobState``, ``TRES``/``ReqTRES``/``AllocTRES``, ``TresPerNode=gres:gpu:h100:2``), so the code that
# reads job fields is the same for every source; each job is read on its own and a job that cannot be
# read is left out and named in ``problems``, never the whole answer.

MAX_JOBS = 1_000_000  # jobs read from one document (Slurm's MaxJobCount is at most 64 M, sites use 10 k-1 M)
MAX_JOB_NODES = 100_000  # nodes of one job's allocation
MAX_NODE_CORES = 65_536  # cores of one node (sockets x cores per socket)
NO_VAL = 0xFFFFFFFE  # Slurm's "not set" in the plain dialect (INFINITE is 0xFFFFFFFF)


class JobRecord(NamedTuple):
    """One job of squeue's JSON: ``fields`` in scontrol's key names and spellings (strings, as
    ``scontrol show job -o`` prints them; keys the release does not report are absent), ``allocs`` the
    per-node allocation (``scontrol show job -d``'s ``Nodes=… CPU_IDs=… GRES=…``)."""

    job_id: int
    fields: Mapping[str, str]
    allocs: tuple[NodeAlloc, ...] = ()


class JobsRead(NamedTuple):
    jobs: tuple[JobRecord, ...]
    problems: tuple[str, ...] = ()  # one line per job left out (and why)
    dialect: str = ""  # openapi/v0.0.38, data_parser/v0.0.42, ...
    release: str = ""  # meta's Slurm release: 22.05.8, 24.11.5


def _num(value: Any) -> int | None:
    """A number in either dialect (``5``; ``{"set": true, "infinite": false, "number": 5}``); None when
    unset, NO_VAL or not a number; INFINITE (0xFFFFFFFF) when infinite."""
    if isinstance(value, dict):
        if value.get("infinite"):
            return 0xFFFFFFFF
        if not value.get("set"):
            return None
        value = value.get("number")
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return None if value == NO_VAL else value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _or_null(value: Any) -> str:
    return _text(value) or "(null)"


def _jcount(value: Any) -> str | None:
    n = _num(value)
    return None if n is None or n >= NO_VAL else str(n)


def _flag(value: Any) -> str | None:
    return None if not isinstance(value, bool) else str(int(value))


def _stamp(value: Any, unset: str = "Unknown") -> str:
    """Epoch seconds -> scontrol's local time (2026-12-01T23:26:18); ``unset`` for 0 or unset."""
    n = _num(value)
    if not n or n >= NO_VAL:
        return unset
    try:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(n))
    except (OverflowError, OSError, ValueError):
        return unset


def _minutes_text(value: Any) -> str | None:
    """A time limit in minutes -> scontrol's ``04:00:00`` / ``1-00:00:00`` / ``UNLIMITED`` (22.05's JSON
    writes null for it, 24.11's ``"infinite": true``: measured with ``timelimit=UNLIMITED``)."""
    if value is None:
        return "UNLIMITED"
    n = _num(value)
    if n is None:
        return None
    if n >= NO_VAL:
        return "UNLIMITED"
    days, rest = divmod(n * 60, 86400)
    hours, rest = divmod(rest, 3600)
    text = f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def _mem(value: Any) -> str | None:
    n = _num(value)
    return None if n is None or n >= NO_VAL else f"{n}M"


# job_state flags in the order scontrol's job_state_string() names them before the base state
# (25.11's EXPEDITING, docs only, with the requeue flags: a wrapped job_state that lists it is "EXPEDITING")
_STATE_FLAGS = ("COMPLETING", "STAGE_OUT", "CONFIGURING", "RESIZING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD",
                "EXPEDITING", "SPECIAL_EXIT", "STOPPED", "REVOKED", "RESV_DEL_HOLD", "SIGNALING")


def _state(value: Any) -> str:
    """``"RUNNING"`` (plain) or ``["COMPLETED", "COMPLETING"]`` (wrapped) -> scontrol's ``COMPLETING``."""
    if isinstance(value, str):
        return value or "UNKNOWN"
    names = [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
    for flag in _STATE_FLAGS:
        if flag in names:
            return flag
    return names[0] if names else "UNKNOWN"


def _exit(value: Any) -> str | None:
    """The exit code as ``RC:SIG``: a wait status (plain) or {"return_code", "signal": {"id"}} (wrapped)."""
    if isinstance(value, dict):
        rc = _num(value.get("return_code"))
        sig = _num((value.get("signal") or {}).get("id")) if isinstance(value.get("signal"), dict) else None
        return f"{rc or 0}:{sig or 0}"
    n = _num(value)
    if n is None:
        return None
    signalled = (n & 0x7F) not in (0, 0x7F)
    return f"{0 if signalled else (n >> 8) & 0xFF}:{n & 0x7F if signalled else 0}"


def _who(name: Any, ident: Any) -> str | None:
    n = _num(ident)
    return None if n is None else f"{_text(name) or n}({n})"


def _num_nodes(job: Mapping[str, Any]) -> str | None:
    low, high = _num(job.get("node_count")), _num(job.get("max_nodes"))
    if low is None:
        return None
    pending = _state(job.get("job_state")) == "PENDING"  # scontrol shows a pending job's range: 2-2, 2-4
    return f"{low}-{high}" if pending and high and high < NO_VAL else str(low)


def _reason(job: Mapping[str, Any]) -> str:
    """scontrol prints the state description (spaces as ``_``) where Slurm set one, else the reason."""
    desc = _text(job.get("state_description"))
    return desc.replace(" ", "_") if desc else (_text(job.get("state_reason")) or "None")


# data_parser/v0.0.43+ (25.05+): the expanded path beside the pattern (openapi release notes, 25.05)
_EXPANDED = {"standard_input": "stdin_expanded", "standard_output": "stdout_expanded",
             "standard_error": "stderr_expanded"}


def _std_path(job: Mapping[str, Any], key: str) -> str | None:
    """An output path as scontrol prints it: Slurm's default (``slurm-%j.out``, arrays ``slurm-%A_%a.out``)
    where the job set none, relative to the work dir, with ``%j %A %a %u %x %N %%`` filled in (22.05's JSON
    keeps the pattern; 24.11's fills it in already; from data_parser/v0.0.43 ``standard_output`` is the pattern
    again and ``stdout_expanded`` the path, measured on 26.05.5: the expanded one is read where it is given)."""
    expanded = _text(job.get(_EXPANDED[key]))
    if expanded:  # Slurm's own expansion, absolute (a backslash in the pattern: no %-fields, backslashes gone)
        return expanded
    text = _text(job.get(key))
    batch = job.get("batch_flag") is True
    if not text:
        if key == "standard_input":
            return "/dev/null" if batch else None
        if not batch:
            return None
        text = "slurm-%A_%a.out" if _num(job.get("array_job_id")) else "slurm-%j.out"
    if "%" in text:
        job_id = _num(job.get("job_id"))
        array, task = _num(job.get("array_job_id")), _num(job.get("array_task_id"))
        node = _text(job.get("batch_host")) or _text(job.get("nodes"))
        values = {"j": str(job_id), "A": str(array or job_id), "a": str(task if task is not None else 4294967294),
                  "u": _text(job.get("user_name")), "x": _text(job.get("name")), "N": node, "%": "%"}
        text = re.sub(r"%([0-9]{0,4})([jAauxN%])", lambda m: values[m.group(2)].zfill(int(m.group(1) or 0)), text)
    workdir = _text(job.get("current_working_directory"))
    if not text.startswith("/") and workdir:
        text = f"{workdir.rstrip('/')}/{text}"
    return text


def _tres(job: Mapping[str, Any]) -> str | None:
    return _text(job.get("tres_alloc_str")) or _text(job.get("tres_req_str")) or None


# scontrol key -> how to read it from one job object (None: the key is left out). A table, not a chain.
_JOB_FIELDS: tuple[tuple[str, Callable[[Mapping[str, Any]], str | None]], ...] = (
    ("JobName", lambda j: _text(j.get("name"))),
    ("UserId", lambda j: _who(j.get("user_name"), j.get("user_id"))),
    ("GroupId", lambda j: _who(j.get("group_name"), j.get("group_id"))),
    ("Priority", lambda j: _jcount(j.get("priority"))),
    ("Account", lambda j: _text(j.get("account"))),
    ("QOS", lambda j: _text(j.get("qos"))),
    ("JobState", lambda j: _state(j.get("job_state"))),
    ("Reason", _reason),
    ("Dependency", lambda j: _or_null(j.get("dependency"))),
    ("Requeue", lambda j: _flag(j.get("requeue"))),
    ("Restarts", lambda j: _jcount(j.get("restart_cnt"))),
    ("BatchFlag", lambda j: _flag(j.get("batch_flag"))),
    ("ExitCode", lambda j: _exit(j.get("exit_code"))),
    ("DerivedExitCode", lambda j: _exit(j.get("derived_exit_code"))),
    ("TimeLimit", lambda j: _minutes_text(j["time_limit"]) if "time_limit" in j else None),
    ("SubmitTime", lambda j: _stamp(j.get("submit_time"))),
    ("EligibleTime", lambda j: _stamp(j.get("eligible_time"))),
    ("StartTime", lambda j: _stamp(j.get("start_time"))),
    ("EndTime", lambda j: _stamp(j.get("end_time"))),
    ("PreemptTime", lambda j: _stamp(j.get("preempt_time"), "None")),
    ("Partition", lambda j: _text(j.get("partition"))),
    ("Reservation", lambda j: _text(j.get("resv_name")) or None),
    ("ReqNodeList", lambda j: _or_null(j.get("required_nodes"))),
    ("ExcNodeList", lambda j: _or_null(j.get("excluded_nodes"))),
    ("NodeList", lambda j: _text(j.get("nodes"))),
    ("SchedNodeList", lambda j: _text(j.get("scheduled_nodes")) or None),
    ("BatchHost", lambda j: _text(j.get("batch_host")) or None),
    ("NumNodes", _num_nodes),
    ("NumCPUs", lambda j: _jcount(j.get("cpus"))),
    ("NumTasks", lambda j: _jcount(j.get("tasks"))),
    ("CPUs/Task", lambda j: _jcount(j.get("cpus_per_task"))),
    ("TRES", _tres),  # 22.05's one field: the allocation once allocated, else the request
    ("ReqTRES", lambda j: _text(j.get("tres_req_str")) or None),
    ("AllocTRES", lambda j: _text(j.get("tres_alloc_str")) or None),
    ("MinMemoryNode", lambda j: _mem(j.get("memory_per_node"))),
    ("MinMemoryCPU", lambda j: _mem(j.get("memory_per_cpu"))),
    ("Features", lambda j: _or_null(j.get("features"))),
    ("Command", lambda j: _text(j.get("command"))),
    ("WorkDir", lambda j: _text(j.get("current_working_directory"))),
    ("AdminComment", lambda j: _text(j.get("admin_comment")) or None),
    ("Comment", lambda j: _text(j.get("comment")) or None),
    ("StdErr", lambda j: _std_path(j, "standard_error") if _text(j.get("standard_error"))
     else _std_path(j, "standard_output")),  # Slurm's default error file is the output file
    ("StdIn", lambda j: _std_path(j, "standard_input")),
    ("StdOut", lambda j: _std_path(j, "standard_output")),
    ("TresPerJob", lambda j: _text(j.get("tres_per_job")) or None),
    ("TresPerNode", lambda j: _text(j.get("tres_per_node")) or None),
    ("TresPerSocket", lambda j: _text(j.get("tres_per_socket")) or None),
    ("TresPerTask", lambda j: _text(j.get("tres_per_task")) or None),
    ("CpusPerTres", lambda j: _text(j.get("cpus_per_tres")) or None),
    ("MemPerTres", lambda j: _text(j.get("memory_per_tres")) or None),
    ("TresBind", lambda j: _text(j.get("tres_bind")) or None),
    ("TresFreq", lambda j: _text(j.get("tres_freq")) or None),
    ("MailUser", lambda j: _text(j.get("mail_user")) or None),
    ("SubmitLine", lambda j: _text(j.get("submit_line")) or None),  # 26.05 prints it in scontrol's text
    ("ArrayJobId", lambda j: _jcount(j.get("array_job_id")) if _num(j.get("array_job_id")) else None),
    ("ArrayTaskId", lambda j: (_jcount(j.get("array_task_id")) or _text(j.get("array_task_string")) or None)
     if _num(j.get("array_job_id")) else None),  # a pending array's own record: its tasks (0-2)
    # the job's network placement (squeue --json=v0.0.42 on 24.11.5, measured; 22.05.8's JSON has neither)
    ("ReqSwitch", lambda j: _jcount(j.get("required_switches")) if _num(j.get("required_switches")) else None),
    ("Wait4Switch", lambda j: _jcount(j.get("maximum_switch_wait_time"))
     if _num(j.get("required_switches")) else None),
    ("SegmentSize", lambda j: _jcount(j.get("segment_size")) if _num(j.get("segment_size")) else None),
    ("HetJobId", lambda j: _jcount(j.get("het_job_id")) if _num(j.get("het_job_id")) else None),
    ("HetJobOffset", lambda j: _jcount(j.get("het_job_offset")) if _num(j.get("het_job_id")) else None),
)

Topology = Mapping[str, tuple[int, int]]  # node -> (cores per socket, threads per core)


def _cores(node: Mapping[str, Any]) -> list[tuple[int, int, int | None]]:
    """(socket, core within it, cores the socket lists or None) of one node's allocation, both dialects:
    plain ``{"sockets": {"1": {"cores": {"0": "allocated"}}}}`` (allocated cores only), wrapped
    ``{"sockets": [{"index": 1, "cores": [{"index": 0, "status": ["ALLOCATED"]}, ...]}]}`` (every core)."""
    out: list[tuple[int, int, int | None]] = []
    sockets = node.get("sockets")
    if isinstance(sockets, dict):  # plain
        for s_key, sock in sockets.items():
            cores = sock.get("cores") if isinstance(sock, dict) else None
            if isinstance(cores, dict):
                out += [(int(s_key), int(c_key), None) for c_key, status in cores.items()
                        if str(status).lower() != "unallocated"]
    elif isinstance(sockets, list):  # wrapped
        for sock in sockets:
            cores = sock.get("cores") if isinstance(sock, dict) else None
            if isinstance(cores, list):
                out += [(int(sock["index"]), int(core["index"]), len(cores)) for core in cores
                        if isinstance(core, dict) and "UNALLOCATED" not in (core.get("status") or ())]
    if len(out) > MAX_NODE_CORES:
        raise ValueError(f"{len(out)} cores on one node")
    return out


def _allocs(job: Mapping[str, Any], topology: Topology | None) -> tuple[NodeAlloc, ...]:
    """The per-node allocation from ``job_resources`` and ``gres_detail`` (one entry per node, in order).
    CPU ids are scontrol's (``(socket x cores per socket + core) x threads + thread``); without the node's
    topology a plain-dialect allocation (which lists allocated cores only) has no CPU ids."""
    res = job.get("job_resources")
    if not isinstance(res, dict):
        return ()
    nodes = res.get("allocated_nodes")  # plain
    if nodes is None and isinstance(res.get("nodes"), dict):
        nodes = res["nodes"].get("allocation")  # wrapped
    if not isinstance(nodes, list):
        return ()
    if len(nodes) > MAX_JOB_NODES:
        raise ValueError(f"{len(nodes)} nodes in one allocation")
    detail = job.get("gres_detail")
    detail = detail if isinstance(detail, list) else []
    out = []
    for i, node in enumerate(nodes):
        if not isinstance(node, dict):
            continue
        name = _text(node.get("nodename")) or _text(node.get("name"))
        cores = _cores(node)
        cps, tpc = (topology or {}).get(name, (None, 1))
        cpus: set[int] = set()
        for sock, core, listed in cores:
            per = cps if cps is not None else listed
            if per is None:
                cpus = set()
                break
            base = (sock * per + core) * tpc
            cpus.update(range(base, base + tpc))
        gres = _text(detail[i]) if i < len(detail) else ""
        out.append(NodeAlloc(name, frozenset(cpus), gpu_indices(gres), gres))
    return tuple(out)


def _job_record(job: Mapping[str, Any], topology: Topology | None,
                fields_read: tuple[tuple[str, Callable[[Mapping[str, Any]], str | None]], ...]) -> JobRecord:
    job_id = job.get("job_id")
    if isinstance(job_id, bool) or not isinstance(job_id, int) or not 0 < job_id < 1 << 32:
        raise ValueError(f"job_id {str(job_id)[:20]!r} is no job id")
    fields = {"JobId": str(job_id)}
    for key, read in fields_read:
        value = read(job)
        if value is not None:
            fields[key] = value
    return JobRecord(job_id, MappingProxyType(fields), _allocs(job, topology))


def read_jobs(text: str, topology: Topology | None = None, keys: Collection[str] | None = None) -> JobsRead:
    """squeue's (or ``scontrol --json show job``'s) JSON -> one :class:`JobRecord` per job it holds.
    ``keys``: only these fields (scontrol's names; JobId always), for a caller that reads a few of
    thousands of jobs (the cluster view). A document that is not Slurm's JSON raises SlurmGpuError (one
    line); a job that cannot be read is left out and named in ``problems`` (at most the first 20), the
    others are read."""
    from slurm_gpu.errors import SlurmGpuError
    from slurm_gpu.slurm.release import JSON_DIALECTS

    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise SlurmGpuError(f"squeue --json: not a JSON document ({str(exc)[:80]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise SlurmGpuError("squeue --json: no 'jobs' list in the document")
    meta = _obj(doc.get("meta"))
    plugin = _obj(meta.get("plugin"))
    dialect = _text(plugin.get("data_parser")) or _text(plugin.get("type"))
    release = _text(_obj(meta.get("slurm") or meta.get("Slurm")).get("release"))
    problems: list[str] = []
    if dialect not in JSON_DIALECTS:
        problems.append(f"squeue --json: unknown JSON format {dialect[:40]!r} (read by its shape)")
    jobs: list[JobRecord] = []
    left_out = 0
    wanted = _JOB_FIELDS if keys is None else tuple((k, f) for k, f in _JOB_FIELDS if k in keys)
    for job in doc["jobs"][:MAX_JOBS]:
        try:
            if not isinstance(job, dict):
                raise ValueError("not an object")
            jobs.append(_job_record(job, topology, wanted))
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError) as exc:
            left_out += 1
            if left_out <= 20:
                jid = job.get("job_id") if isinstance(job, dict) else None
                problems.append(f"job {str(jid)[:20]}: left out ({type(exc).__name__}: {str(exc)[:120]})")
    if left_out > 20:
        problems.append(f"{left_out - 20} more jobs left out")
    if len(doc["jobs"]) > MAX_JOBS:
        problems.append(f"{len(doc['jobs']) - MAX_JOBS} jobs beyond the first {MAX_JOBS} not read")
    return JobsRead(tuple(jobs), tuple(problems), dialect, release)


def job_from(read: JobsRead, job_id: int) -> JobRecord | None:
    """The record of ``job_id`` (22.05's squeue --json prints every job whatever -j says)."""
    return next((j for j in read.jobs if j.job_id == job_id), None)


# -- one job's state from squeue -O (no user text) --------------------------------------------------
#
# ``squeue -h -t all -j ID -O "JobID:|,State:|,..."``: fields that hold no user text, each followed by
# "|"; a job's work dir (user text) comes last, so it cannot move the fields before it. The cheap
# single-job read (it honours -j on every release): gpusub --wait's polling and the EpilogSlurmctld's
# first look; the EpilogSlurmctld checks it against squeue's JSON before it requeues.

SQUEUE_FIELDS: tuple[tuple[str, str], ...] = (  # (scontrol key, squeue -O field)
    ("JobId", "JobID"), ("JobState", "State"), ("Reason", "Reason"), ("Restarts", "RestartCnt"),
    ("Requeue", "Requeue"), ("BatchFlag", "BatchFlag"), ("PreemptTime", "PreemptTime"),
    ("StartTime", "StartTime"), ("Partition", "Partition"), ("QOS", "QOS"), ("UserId", "UserId"),
    ("NodeList", "NodeList"), ("RunTime", "TimeUsed"), ("ExitCode", "exit_code"), ("WorkDir", "WorkDir"),
)
_SQUEUE_UNSET = {"PreemptTime": ("N/A", "None"), "StartTime": ("N/A", "Unknown")}


def squeue_format() -> str:
    """The ``-O`` argument for :data:`SQUEUE_FIELDS`."""
    return ",".join(f"{field}:|" for _, field in SQUEUE_FIELDS)


def parse_squeue_job(text: str, job_id: int) -> dict[str, str] | None:
    """``squeue -h -t all -j ID -O`` :func:`squeue_format` -> the job's fields in scontrol's names
    (``UserId`` as the uid, ``ExitCode`` ``RC:SIG``); None when squeue printed no record of that job.
    The record starts the output; everything after its last fixed field is the work dir."""
    head = f"{job_id}|"
    if not text.startswith(head):
        return None
    parts = text.rstrip("\n").split("|", len(SQUEUE_FIELDS) - 1)
    if len(parts) != len(SQUEUE_FIELDS):
        return None
    parts[-1] = parts[-1][:-1] if parts[-1].endswith("|") else parts[-1]
    fields = {key: value for (key, _), value in zip(SQUEUE_FIELDS, parts, strict=True)}
    for key, (shown, meant) in _SQUEUE_UNSET.items():
        if fields[key] == shown:
            fields[key] = meant
    code = fields["ExitCode"]
    if ":" not in code and is_digits(code) and len(code) <= 10:  # 22.05 prints the wait status's number
        fields["ExitCode"] = _exit(int(fields["ExitCode"])) or "0:0"
    return fields


__all__ = ["ACTIVE_STATES", "job_tres",
           "SubmitResult", "TestOnlyResult", "JobState", "NodeAlloc", "one_line", "parse_kv_line",
           "gpu_indices", "parse_parsable", "parse_test_only", "exit_code", "job_state_of", "parse_nodes",
           "parse_node_fields", "parse_sbatch_version", "GresCount", "parse_gres_counts", "NodeRecord", "node_record",
           "NodesRead", "read_node_records", "parse_node_records", "topology_of", "JobGres", "job_gres",
           "JOB_GRES_KEYS", "partition_gpu_defaults", "JobRecord", "JobsRead", "read_jobs", "job_from", "MAX_JOBS",
           "MAX_JOB_NODES", "SQUEUE_FIELDS", "squeue_format", "parse_squeue_job"]
