# SPDX-License-Identifier: Apache-2.0
"""The one home of the parsers of Slurm's records (pure: text in, data out).

- ``scontrol show job -o`` / ``scontrol show node -o``: :func:`parse_kv_line`, :func:`job_state_of`;
- ``scontrol show job -d`` (multi-line, with per-node ``Nodes=… CPU_IDs=… GRES=…`` lines):
  :func:`job_detail` -> (job fields, :class:`NodeAlloc` per node);
- ``sbatch --parsable`` stdout: :func:`parse_parsable`;
- ``sbatch --test-only`` stderr: :func:`parse_test_only`;
- ``sbatch --version``: :func:`parse_sbatch_version`;
- a client's stderr -> its one useful line: :func:`one_line`.

Texts are those the lab's 22.05.8 and 24.11.5 printed (tests/adapters hold them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType

from slurm_gpu.cpulist import parse_cpulist
from slurm_gpu.digits import is_digits
from slurm_gpu.hostlist import expand_hostlist
from slurm_gpu.plain import NamedTuple
from slurm_gpu.slurm.release import parse_sbatch_version

# States in which a job may still run or run again; every other state is final.
ACTIVE_STATES = frozenset({"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED",
                           "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED",
                           "PREEMPTED"})


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


def parse_kv_line(line: str) -> dict[str, str]:
    """``scontrol -o`` output: space separated ``Key=Value`` pairs (values may contain ``=``; a word
    without ``=`` continues the previous value, e.g. ``Reason=`` text or a ``Command`` path with spaces)."""
    out: dict[str, str] = {}
    key = None
    for word in line.split(" "):
        if "=" in word and not word.startswith("="):
            key, _, value = word.partition("=")
            out[key] = value
        elif key and word:
            out[key] += " " + word
    return out


def _cpuset(text: str) -> frozenset[int]:
    return frozenset(parse_cpulist(text)) if text and text != "(null)" else frozenset()


def gpu_indices(gres: str) -> frozenset[int]:
    """``gpu:h100:2(IDX:0,4),gpu:a100:1(IDX:2)`` -> {0, 2, 4} (GPU items only)."""
    idx: set[int] = set()
    for part in gres.split("),"):
        if "(IDX:" in part and part.startswith("gpu"):
            text = part.split("(IDX:", 1)[1].rstrip(")")
            if text and text != "N/A":
                idx |= set(parse_cpulist(text))
    return frozenset(idx)


def job_tres(record: Mapping[str, str]) -> dict[str, str]:
    """A job record's TRES as ``{"cpu": "8", "mem": "64000M", "gres/gpu": "2", ...}``: what the job holds
    once allocated, else what it asks for. 22.05-23.x print one ``TRES=`` field (the request while
    pending, the allocation once running); 24.11 prints ``ReqTRES=`` and, once allocated, ``AllocTRES=``."""
    text = record.get("AllocTRES") or record.get("TRES") or record.get("ReqTRES") or ""
    if text in ("(null)", "None"):
        text = record.get("ReqTRES") or ""
    return dict(item.split("=", 1) for item in text.split(",") if "=" in item)


def node_allocs(detail_text: str) -> list[NodeAlloc]:
    """The per-node lines of ``scontrol show job -d`` (one or several nodes per line)."""
    allocs = []
    for raw in detail_text.splitlines():
        line = raw.strip()
        if not line.startswith("Nodes=") or "CPU_IDs=" not in line:
            continue
        fields = parse_kv_line(line)
        cpus = _cpuset(fields.get("CPU_IDs", ""))
        gres = fields.get("GRES", "")
        for node in expand_hostlist(fields["Nodes"]):
            allocs.append(NodeAlloc(node, cpus, gpu_indices(gres), gres))
    return allocs


def job_detail(detail_text: str) -> tuple[dict[str, str], list[NodeAlloc]]:
    """``scontrol show job -d``: (key -> value of the job record, first occurrence wins; the per-node
    allocations). Values with spaces keep only their first word here; use ``-o`` for those."""
    fields: dict[str, str] = {}
    for raw in detail_text.splitlines():
        line = raw.strip()
        if line.startswith("Nodes=") and "CPU_IDs=" in line:
            continue
        for word in line.split():
            key, sep, value = word.partition("=")
            if sep and key:
                fields.setdefault(key, value)
    return fields, node_allocs(detail_text)


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
    """``scontrol show node -o`` (one node per line) -> node name -> its fields."""
    out: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        if line.startswith("NodeName="):
            rec = parse_kv_line(line.strip())
            out[rec["NodeName"]] = rec
    return out


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


_SHARES = re.compile(r"[0-9]+/[0-9]+(?:,[0-9]+/[0-9]+)*\)?")


def _shares(paren: str) -> tuple[tuple[int, int], ...] | None:
    """``3/4,0/4)`` -> ((3, 4), (0, 4)); None for anything else or more entries than GPU indices."""
    if not _SHARES.fullmatch(paren) or paren.count(",") > MAX_GRES_INDEX:
        return None
    return tuple((int(a), int(b)) for a, b in (pair.split("/") for pair in paren.rstrip(")").split(",")))


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
                      reason=fields.get("Reason", ""))


_NODE_KEYS = re.compile(r"(?:^| )(NodeName|State|Partitions|CPUTot|CPUEfctv|CPUAlloc|RealMemory|AllocMem|Sockets|"
                        r"CoresPerSocket|Gres|GresUsed)=(\S*)")
_REASON = re.compile(r" Reason=(.*?)(?= [A-Za-z_/:]+=|$)")


def parse_node_records(text: str) -> list[NodeRecord]:
    """``scontrol show node -d -o`` -> one NodeRecord per ``NodeName=`` line. Reads only the keys
    NodeRecord holds (one regular expression per line: the cluster view reads thousands of nodes)."""
    out = []
    for line in text.splitlines():
        if line.startswith("NodeName="):
            fields = dict(_NODE_KEYS.findall(line))
            reason = _REASON.search(line)
            if reason:
                fields["Reason"] = reason.group(1)
            out.append(node_record(fields))
    return out


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


_JOB_KEYS = re.compile(r"(?:^| )(JobId|UserId|JobState|Partition|NumNodes|TresPerNode|TresPerJob|TRES|ReqTRES|"
                       r"AllocTRES)=(\S*)")
_JOB_NODE_GRES = re.compile(r" Nodes=(\S+) CPU_IDs=\S* (?:Mem=\S* )?GRES=(\S*)")


def job_gres(line: str) -> JobGres:
    """One ``scontrol show job -d -o`` line -> JobGres. The ``Nodes=X CPU_IDs=… Mem=… GRES=…`` groups of a
    multi-node job are all read (a plain key/value parse would keep only the last); only the keys
    JobGres needs are read (one regular expression per line)."""
    fields = dict(_JOB_KEYS.findall(line))
    held: list[tuple[str, tuple[GresCount, ...]]] = []
    for nodes_text, gres_text in _JOB_NODE_GRES.findall(line):
        gres = parse_gres_counts(gres_text)
        if gres:
            names = [nodes_text] if "[" not in nodes_text and "," not in nodes_text else expand_hostlist(nodes_text)
            held.extend((node, gres) for node in names)
    # a pending job's NumNodes may be a range ("2-2", "2-4"): its minimum is what each node is asked for
    m = re.match(r"[0-9]+", fields.get("NumNodes", ""))
    nodes = (int(m.group(0)) if m else 0) or 1
    request = parse_gres_counts(fields.get("TresPerNode", ""))
    if not request:  # --gpus=N: per job, spread over its nodes
        request = tuple(item._replace(count=-(-item.count // nodes))
                        for item in parse_gres_counts(fields.get("TresPerJob", "")))
    if not request:  # per task and the rest: the job's TRES, typed items first, per node
        tres = [(k[5:].split(":", 1), v) for k, v in job_tres(fields).items() if k.startswith("gres/") and is_digits(v)]
        typed = [(kt, v) for kt, v in tres if len(kt) == 2]
        chosen = typed or [(kt, v) for kt, v in tres if len(kt) == 1 and not any(t[0][0] == kt[0] for t in typed)]
        request = tuple(GresCount(kt[0], kt[1] if len(kt) == 2 else None, -(-int(v) // nodes)) for kt, v in chosen)
    user = fields.get("UserId", "").split("(", 1)[0]
    return JobGres(fields.get("JobId", ""), user, (fields.get("JobState") or "UNKNOWN").split()[0],
                   fields.get("Partition", ""), nodes, request, tuple(held))


def parse_job_gres(text: str) -> list[JobGres]:
    """``scontrol show job -d -o`` -> one JobGres per ``JobId=`` line."""
    return [job_gres(line) for line in text.splitlines() if line.startswith("JobId=")]


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


__all__ = ["ACTIVE_STATES", "job_tres",
           "SubmitResult", "TestOnlyResult", "JobState", "NodeAlloc", "one_line", "parse_kv_line",
           "gpu_indices", "node_allocs", "job_detail", "parse_parsable", "parse_test_only", "exit_code",
           "job_state_of", "parse_nodes", "parse_sbatch_version", "GresCount", "parse_gres_counts",
           "NodeRecord", "node_record", "parse_node_records", "JobGres", "job_gres", "parse_job_gres",
           "partition_gpu_defaults"]
