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

from collections.abc import Mapping
from types import MappingProxyType

from slurm_gpu.cpulist import parse_cpulist
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
    return SubmitResult(int(job), cluster.strip() or None) if job.isdigit() else None


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
            job_id = int(words[1]) if words[1].isdigit() else None
            start = words[words.index("at") + 1]
            if "using" in words:
                value = words[words.index("using") + 1]
                processors = int(value) if value.isdigit() else None
            if "nodes" in words:
                nodes = words[words.index("nodes") + 1]
            if "partition" in words:
                partition = words[words.index("partition") + 1]
        elif text.startswith("Preempts:"):
            preempts = tuple(int(x) for x in text.split(":", 1)[1].replace(",", " ").split() if x.isdigit())
    return TestOnlyResult(job_id, start, processors, nodes, partition, preempts, message)


def exit_code(value: str | None) -> tuple[int | None, int | None]:
    """``ExitCode=3:0`` -> (3, 0); (None, None) when absent."""
    if not value or ":" not in value:
        return None, None
    rc, _, sig = value.partition(":")
    return (int(rc) if rc.isdigit() else None), (int(sig) if sig.isdigit() else None)


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


__all__ = ["ACTIVE_STATES", "job_tres",
           "SubmitResult", "TestOnlyResult", "JobState", "NodeAlloc", "one_line", "parse_kv_line",
           "gpu_indices", "node_allocs", "job_detail", "parse_parsable", "parse_test_only", "exit_code",
           "job_state_of", "parse_nodes", "parse_sbatch_version"]
