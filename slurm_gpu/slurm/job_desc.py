# SPDX-License-Identifier: Apache-2.0
"""The ``job_desc`` table Slurm hands job_submit.lua, modelled from gpusub's own parse (pure).

``job_desc_for(argv, version)`` gives the fields slurmctld's job_submit/lua shows the plugin for an
sbatch, salloc or srun command line: what the client (slurm_opt.c) writes into the job description,
as the Lua getter reads it. Every rule here is measured: tests/job_submit/fixtures/<version>/ holds the
dumps of job_submit/record.lua for ~150 command lines on 22.05.8 and 24.11.5, and
tests/job_submit/test_job_desc_model.py checks that this model reproduces each dump, field by field,
for the fields in :data:`MODEL_FIELDS`. See docs/job_submit.md.

The model is a table, :data:`FIELDS`: one row ``(field, rule)`` per job_desc field, in the order the
dict is written, each rule a small function of the component's command line (``_Line``). The counts
several rules read (node range, tasks, sockets) are settled once, in slurm_opt.c's order
(``_Shape`` and the fill-ins of ``_FILL_INS``). A new field is a new row.

Unset strings are None (Lua nil); unset numbers are Slurm's sentinels (:data:`NO_VAL`, :data:`NO_VAL16`,
:data:`NO_VAL64`); ``pn_min_memory`` carries :data:`MEM_PER_CPU` for ``--mem-per-cpu`` (Lua numbers
are doubles, so the 64-bit values are given as the floats Lua holds).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import NamedTuple, TypeAlias

from slurm_gpu import units
from slurm_gpu.digits import is_digits
from slurm_gpu.plain import Record, record
from slurm_gpu.slurm.release import Version, as_version
from slurm_gpu.slurm.sbatch import values as sv
from slurm_gpu.slurm.sbatch.parse import Submission, parse_submission

JobDescValue: TypeAlias = "str | int | float | bool | None"  # what a job_desc field holds, as Lua reads it
JobDesc: TypeAlias = "dict[str, JobDescValue]"

NO_VAL = 0xFFFFFFFE
NO_VAL16 = 0xFFFE
INFINITE = 0xFFFFFFFF
NO_VAL64 = float(0xFFFFFFFFFFFFFFFE)  # as Lua sees it (a double)
MEM_PER_CPU = 0x8000000000000000
NICE_OFFSET = 0x80000000

GRES_SLASH_SINCE: Version = (23, 11, 0)     # "gres/gpu:..." instead of "gres:gpu:..." (slurm_opt.c)
TASK_EQUALS_SINCE: Version = (24, 5, 0)     # tres_per_task "gres/gpu=N", "cpu=N" items, implicit tres_bind

# srun/salloc-only options the sbatch parser does not know: (long name, takes an argument, short)
_INTERACTIVE_ONLY = {"no-shell": False, "pty": False, "immediate": None, "unbuffered": False, "label": False}
_INTERACTIVE_SHORT = {"-I": None, "-u": False, "-l": False}


class ModelGap(ValueError):
    """A command line this model does not cover (an option the sbatch front end does not know)."""


def strip_interactive(args: list[str]) -> list[str]:
    """An srun/salloc command line without the options that only those tools know (see _INTERACTIVE_ONLY),
    so that the sbatch parser can read the rest."""
    out = []
    for a in args:
        name = a[2:].split("=", 1)[0] if a.startswith("--") else None
        if name in _INTERACTIVE_ONLY:
            continue
        if a[:2] in _INTERACTIVE_SHORT and (len(a) == 2 or is_digits(a[2:])):
            continue
        out.append(a)
    return out


def _prefix(version: Version) -> str:
    return "gres/" if version >= GRES_SLASH_SINCE else "gres:"


def _gpu_items(text: str, version: Version) -> list[str]:
    # verbatim after "gpu:" (24.11 writes --gpus=gpu:h100:1 as "gres/gpu:gpu:h100:1"; 22.05 refuses it)
    return [f"{_prefix(version)}gpu:{item}" for item in text.split(",")]


def _gpu_total(text: str) -> int:
    return sum(g.count for g in sv.parse_gpus(text))


def _gres(text: str, version: Version) -> str | None:
    if text.strip().lower() == "none":
        return None
    out = []
    for item in text.split(","):
        out.append(_prefix(version) + sv.gres_body(item))
    return ",".join(out)


def _per_task(text: str, version: Version) -> str:
    if version < TASK_EQUALS_SINCE:
        return ",".join(_gpu_items(text, version))
    out = []
    for item in text.split(","):
        bits = (item[4:] if item.startswith("gpu:") else item).split(":")
        out.append("gres/gpu" + "".join(":" + b for b in bits[:-1]) + "=" + bits[-1])
    return ",".join(out)


def _time(text: str | None) -> int:
    if text is None:
        return NO_VAL
    minutes = units.parse_time_minutes(text)
    return INFINITE if minutes is None else minutes


def _num(value: str | None, unset: int) -> int:
    return unset if value is None else int(value)


# ---- the rules: one small function per job_desc field (or per concept a few fields share) ----------

class _Shape(NamedTuple):
    """The node, task and socket counts several fields read, settled in the order slurm_opt.c settles them."""

    min_nodes: int | None
    max_nodes: int | None
    cpus_per_task: int | None  # -c as given
    sockets: tuple[int, int, int]  # sockets per node, cores per socket, threads per core (NO_VAL16: unset)
    ntasks: int | None
    tasks_per_node: int | None  # --ntasks-per-node as given


@record
class _Line(Record):
    """One component's command line as the field rules read it."""

    opts: Mapping[str, str | None]
    version: Version
    tool: str  # sbatch, salloc or srun
    sub: Submission
    k: int  # the component's index
    command: str | None  # salloc/srun: the command run

    def get(self, name: str) -> str | None:
        return self.opts.get(name)

    def has(self, name: str) -> bool:
        return name in self.opts

    @property
    def prefix(self) -> str:
        return _prefix(self.version)

    @property
    def tasks_syntax(self) -> bool:
        """24.05+: tres_per_task "gres/gpu=N" and "cpu=N" items, implicit tres_bind, ntasks rules."""
        return self.version >= TASK_EQUALS_SINCE

    @cached_property
    def gres(self) -> str | None:
        """--gres in this release's spelling (None: not given, or ``none``)."""
        return _gres(text, self.version) if (text := self.get("gres")) else None

    @cached_property
    def shape(self) -> _Shape:
        return _shape(self)

    @cached_property
    def memory(self) -> tuple[float | int, int | None, int | None]:
        return _memory(self)


def _node_range(line: _Line) -> tuple[int | None, int | None]:
    lo, hi = sv.parse_nodes_range(text) if (text := line.get("nodes")) else (None, None)
    if lo is None and (names := line.get("nodelist")):
        lo = len(sv.parse_nodelist(names))  # -w alone: one node per name
    return lo, hi


def _sockets(line: _Line) -> tuple[int, int, int]:
    spn, cps, tpc = (_num(line.get(n), NO_VAL16) for n in ("sockets-per-node", "cores-per-socket", "threads-per-core"))
    if extra := line.get("extra-node-info"):  # -B S[:C[:T]]
        bits = [int(b) for b in extra.split(":")]
        spn, cps, tpc = (bits + [NO_VAL16] * 3)[:3]
    if line.get("hint") == "nomultithread":
        tpc = 1
    return spn, cps, tpc


def _tasks_from_per_node(line: _Line, s: _Shape) -> _Shape:
    """--ntasks-per-node without -n: that many per node (24.05+ only with -c; measured, docs/job_submit.md)."""
    if s.ntasks is None and s.tasks_per_node and (not line.tasks_syntax or s.cpus_per_task is not None):
        return s._replace(ntasks=s.tasks_per_node * (s.min_nodes or 1))
    return s


def _nodes_from_tasks(line: _Line, s: _Shape) -> _Shape:
    """24.05+: -n with --ntasks-per-node and no -N sets the minimum node count."""
    if s.min_nodes is None and s.ntasks and s.tasks_per_node and line.tasks_syntax:
        return s._replace(min_nodes=-(-s.ntasks // s.tasks_per_node))
    return s


def _tasks_from_sockets(line: _Line, s: _Shape) -> _Shape:
    """-B S:C:T without -n: one task per thread."""
    if s.ntasks is None and line.get("extra-node-info") and NO_VAL16 not in s.sockets:
        return s._replace(ntasks=s.sockets[0] * s.sockets[1] * s.sockets[2])
    return s


# What the client fills in from the counts it was given, in slurm_opt.c's order (each sees the last's result).
_FILL_INS: tuple[Callable[[_Line, _Shape], _Shape], ...] = (_tasks_from_per_node, _nodes_from_tasks,
                                                          _tasks_from_sockets)


def _shape(line: _Line) -> _Shape:
    lo, hi = _node_range(line)
    cpt = int(text) if (text := line.get("cpus-per-task")) else None
    sockets = _sockets(line)
    ntasks, tpn = (int(line.get(n) or 0) or None for n in ("ntasks", "ntasks-per-node"))
    s = _Shape(lo, hi, cpt, sockets, ntasks, tpn)
    for fill_in in _FILL_INS:
        s = fill_in(line, s)
    return s


def _gpu_list(option: str) -> Rule:
    """A ``--gpus*`` option as "gres/gpu:..." items (None: not given)."""
    def rule(line: _Line) -> str | None:
        text = line.get(option)
        return ",".join(_gpu_items(text, line.version)) if text else None
    rule.__name__ = f"gpu_list[{option}]"
    return rule


def _option(option: str) -> Rule:
    """The option's text as given (None: not given)."""
    def rule(line: _Line) -> str | None:
        return line.get(option)
    rule.__name__ = f"option[{option}]"
    return rule


def _count(option: str) -> Rule:
    """A whole-number option (NO_VAL16: not given)."""
    def rule(line: _Line) -> int:
        return _num(line.get(option), NO_VAL16)
    rule.__name__ = f"count[{option}]"
    return rule


def _tres_per_node(line: _Line) -> str | None:
    items = _gpu_items(text, line.version) if (text := line.get("gpus-per-node")) else []
    if line.gres:
        items.append(line.gres)
    return ",".join(items) or None


def _tres_per_task(line: _Line) -> str | None:
    items = []
    if line.tasks_syntax and (cpt := line.get("cpus-per-task")):
        items.append(f"cpu={cpt}")
    if gpt := line.get("gpus-per-task"):
        items.append(_per_task(gpt, line.version))
    if tpt := line.get("tres-per-task"):
        items.append(tpt)
    return ",".join(items) or None


def _cpus_per_tres(line: _Line) -> str | None:
    return f"{line.prefix}gpu:{cpg}" if (cpg := line.get("cpus-per-gpu")) else None


def _mem_per_tres(line: _Line) -> str | None:
    return f"{line.prefix}gpu:{units.parse_mem_mb(mem)}" if (mem := line.get("mem-per-gpu")) else None


def _ntasks_per_tres(line: _Line) -> int:
    return _num(line.get("ntasks-per-gpu") or line.get("ntasks-per-tres"), NO_VAL16)


def _implicit_bind(line: _Line) -> str | None:
    """24.05+: per-task GPUs bind each task to its own (``gres/gpu:per_task:N``)."""
    if gpt := line.get("gpus-per-task"):
        return f"gres/gpu:per_task:{_gpu_total(gpt)}"
    if tpt := line.get("tres-per-task"):
        counts = [g.count for g in sv.parse_tres(tpt) if g.name == "gpu"]
        return f"gres/gpu:per_task:{sum(counts)}" if counts else None
    return None


def _tres_bind(line: _Line) -> str | None:
    if bind := line.get("tres-bind"):
        return bind
    if gpu_bind := line.get("gpu-bind"):
        return f"{line.prefix if line.version >= GRES_SLASH_SINCE else ''}gpu:{gpu_bind}"
    return _implicit_bind(line) if line.tasks_syntax else None


def _tres_freq(line: _Line) -> str | None:
    return f"gpu:{freq}" if (freq := line.get("gpu-freq")) else None


def _min_nodes(line: _Line) -> int:
    return NO_VAL if line.shape.min_nodes is None else line.shape.min_nodes


def _max_nodes(line: _Line) -> int:
    return NO_VAL if line.shape.max_nodes is None else line.shape.max_nodes


def _num_tasks(line: _Line) -> int:
    return NO_VAL if line.shape.ntasks is None else line.shape.ntasks


def _cpus_per_task(line: _Line) -> int:
    cpt, gpt = line.shape.cpus_per_task, line.get("gpus-per-task")
    if cpt is None and gpt and line.get("cpus-per-gpu"):  # cpus-per-task = cpus-per-gpu x gpus-per-task
        return int(line.get("cpus-per-gpu") or 0) * _gpu_total(gpt)
    return NO_VAL16 if cpt is None else cpt


def _pn_min_cpus(line: _Line) -> int:
    cpt = line.shape.cpus_per_task
    return cpt if cpt is not None else _num(line.get("mincpus"), NO_VAL16)


# How many GPUs a job asks for, for 24.11's CPU floor: the first GPU option given, times what it is per.
_GPUS_TIMES: tuple[tuple[str, Callable[[_Shape], int]], ...] = (
    ("gpus", lambda s: 1),
    ("gpus-per-node", lambda s: s.min_nodes or 1),
    ("gpus-per-task", lambda s: s.ntasks or 1),
    ("gpus-per-socket", lambda s: (s.sockets[0] if s.sockets[0] != NO_VAL16 else 1) * (s.min_nodes or 1)),
)


def _job_gpus(line: _Line) -> int:
    gpus = next((_gpu_total(text) * times(line.shape) for opt, times in _GPUS_TIMES if (text := line.get(opt))), 0)
    if not gpus and line.gres:
        gpus = sum(g.count for g in sv.parse_gres(line.gres) if g.name == "gpu") * (line.shape.min_nodes or 1)
    return gpus


def _min_cpus(line: _Line) -> int:
    s = line.shape
    min_cpus = (s.ntasks or (s.tasks_per_node or 1) * (s.min_nodes or 1)) * (s.cpus_per_task or 1)
    if (cpg := line.get("cpus-per-gpu")) and line.tasks_syntax:  # 24.11: at least cpus-per-gpu x the GPUs
        min_cpus = max(min_cpus, int(cpg) * _job_gpus(line))
    return min_cpus


def _socket_field(i: int) -> Rule:
    def rule(line: _Line) -> int:
        return line.shape.sockets[i]
    rule.__name__ = f"sockets[{i}]"
    return rule


_EXCLUSIVE = {"user": 2, "mcs": 3, "topo": 5}  # --exclusive=WORD -> shared; plain --exclusive: 0


def _shared(line: _Line) -> int:
    if line.has("exclusive"):
        return _EXCLUSIVE.get((line.get("exclusive") or "").lower(), 0)
    return 1 if line.has("oversubscribe") else NO_VAL16


def _contiguous(line: _Line) -> int:
    return 1 if line.has("contiguous") else 0


def _memory(line: _Line) -> tuple[float | int, int | None, int | None]:
    """(pn_min_memory, min_mem_per_node, min_mem_per_cpu): --mem, else --mem-per-cpu (flagged), else unset."""
    if (mem := line.get("mem")) is not None:
        mb = units.parse_mem_mb(mem)
        return mb, mb, None
    if (mem := line.get("mem-per-cpu")) is not None:
        mb = units.parse_mem_mb(mem)
        return float(MEM_PER_CPU | mb), None, mb
    return NO_VAL64, None, None


def _memory_field(i: int) -> Rule:
    def rule(line: _Line) -> JobDescValue:
        return line.memory[i]
    rule.__name__ = f"memory[{i}]"
    return rule


def _switches(part: int) -> Rule:
    """``--switches=COUNT[@MAX-TIME]``: req_switch = COUNT, wait4switch = MAX-TIME in seconds; NO_VAL for
    either without it (every captured job_desc: tests/job_submit/fixtures)."""
    def rule(line: _Line) -> int:
        text = line.get("switches")
        if text is None:
            return NO_VAL
        count, at, wait = text.partition("@")
        if not is_digits(count) or (at and not wait):
            raise ModelGap(f"--switches={text}: not COUNT[@MAX-TIME]")
        if part == 0:
            return int(count)
        try:
            return units.parse_time_seconds(wait) if at else NO_VAL
        except units.UnitError as e:
            raise ModelGap(f"--switches={text}: {e}") from e
    rule.__name__ = ("req_switch", "wait4switch")[part]
    return rule


def _time_field(option: str) -> Rule:
    def rule(line: _Line) -> int:
        return _time(line.get(option))
    rule.__name__ = f"time[{option}]"
    return rule


# The job name when --job-name is not given, by tool
_DEFAULT_NAME: dict[str, Callable[[_Line], str]] = {
    "sbatch": lambda line: "wrap" if line.sub.wrap is not None
    else posixpath.basename(line.sub.script_path or "") or "sbatch",
    "salloc": lambda line: posixpath.basename(line.command) if line.command else "no-shell",
    "srun": lambda line: posixpath.basename(line.command or ""),
}


def _name(line: _Line) -> str | None:
    return line.get("job-name") if line.get("job-name") else _DEFAULT_NAME[line.tool](line)


def _priority(line: _Line) -> int:
    return 0 if any(n == "hold" for comp in line.sub.components for n, _ in comp) else NO_VAL


def _nice(line: _Line) -> int:
    return NICE_OFFSET + int(line.get("nice") or 0) if line.has("nice") else NO_VAL


def _requeue(line: _Line) -> int:
    return 1 if line.has("requeue") else 0 if line.has("no-requeue") else NO_VAL16


def _het_job_offset(line: _Line) -> int:
    return line.k if len(line.sub.components) > 1 else NO_VAL


def _script_set(line: _Line) -> bool:
    return line.tool == "sbatch" and line.k == 0


def _argc(line: _Line) -> int:
    if line.tool == "sbatch":
        return 0 if line.sub.wrap is not None else 1 + len(line.sub.script_args)
    return 0 if line.tool == "salloc" else 1


def _immediate(line: _Line) -> int:
    return 0  # -I/--immediate is stripped before the parse (_INTERACTIVE_ONLY), so always 0 here


Rule = Callable[[_Line], JobDescValue]

# The job_desc, field by field, in the order the model writes them (a rule may read what earlier ones
# settled only through _Line, never through the dict). A new field is a new row.
FIELDS: tuple[tuple[str, Rule], ...] = (
    # GPUs / TRES
    ("tres_per_job", _gpu_list("gpus")),
    ("tres_per_node", _tres_per_node),
    ("gres", _tres_per_node),  # the same string (job_submit/lua's gres getter reads tres_per_node)
    ("tres_per_socket", _gpu_list("gpus-per-socket")),
    ("tres_per_task", _tres_per_task),
    ("cpus_per_tres", _cpus_per_tres),
    ("mem_per_tres", _mem_per_tres),
    ("ntasks_per_tres", _ntasks_per_tres),
    ("ntasks_per_gpu", _ntasks_per_tres),
    ("tres_bind", _tres_bind),
    ("tres_freq", _tres_freq),
    # CPUs, tasks, nodes
    ("min_nodes", _min_nodes),
    ("max_nodes", _max_nodes),
    ("num_tasks", _num_tasks),
    ("cpus_per_task", _cpus_per_task),
    ("pn_min_cpus", _pn_min_cpus),
    ("min_cpus", _min_cpus),
    ("ntasks_per_node", _count("ntasks-per-node")),
    ("ntasks_per_socket", _count("ntasks-per-socket")),
    ("ntasks_per_core", _count("ntasks-per-core")),
    ("sockets_per_node", _socket_field(0)),
    ("cores_per_socket", _socket_field(1)),
    ("threads_per_core", _socket_field(2)),
    ("shared", _shared),
    ("contiguous", _contiguous),
    ("req_nodes", _option("nodelist")),
    ("exc_nodes", _option("exclude")),
    ("features", _option("constraint")),
    ("req_switch", _switches(0)),
    ("wait4switch", _switches(1)),
    # memory
    ("pn_min_memory", _memory_field(0)),
    ("min_mem_per_node", _memory_field(1)),
    ("min_mem_per_cpu", _memory_field(2)),
    # time, where, who
    ("time_limit", _time_field("time")),
    ("time_min", _time_field("time-min")),
    ("partition", _option("partition")),
    ("qos", _option("qos")),
    ("account", _option("account")),
    ("reservation", _option("reservation")),
    ("licenses", _option("licenses")),
    ("wckey", _option("wckey")),
    ("comment", _option("comment")),
    ("array_inx", _option("array")),
    ("mail_user", _option("mail-user")),
    ("name", _name),
    ("priority", _priority),
    ("nice", _nice),
    ("requeue", _requeue),
    ("het_job_offset", _het_job_offset),
    ("script_set", _script_set),
    ("argc", _argc),
    ("immediate", _immediate),
)


# The fields this model claims to reproduce exactly (tests compare these, and only these): every row.
MODEL_FIELDS: tuple[str, ...] = tuple(field for field, _rule in FIELDS)


def _component(opts: Mapping[str, str | None], version: Version, tool: str, sub: Submission, k: int,
               command: str | None) -> JobDesc:
    line = _Line(opts, version, tool, sub, k, command)
    return {field: rule(line) for field, rule in FIELDS}


def job_descs_for(argv: list[str] | tuple[str, ...], version: Version | tuple[int, ...],
                  script_text: str | None = None) -> list[JobDesc]:
    """Every component's job_desc (one for a normal job) for a command line ``[tool, *args]``, tool
    one of sbatch, salloc, srun. ``script_text`` is the batch script (its ``#SBATCH`` lines count).
    Raises ModelGap for what the model does not cover, OptionError for what sbatch would refuse."""
    version = as_version(tuple(version))
    tool, args = posixpath.basename(argv[0]), list(argv[1:])
    if tool not in ("sbatch", "salloc", "srun"):
        raise ModelGap(f"{tool}: only sbatch, salloc and srun are modelled")
    command = None
    if tool != "sbatch":
        args = strip_interactive(args)
        script_text = None
    sub = parse_submission(args, {}, script_text, version=version)
    if tool != "sbatch":
        if any(n in ("wrap", "array") for comp in sub.components for n, _ in comp):
            raise ModelGap(f"{tool}: an sbatch-only option")
        command = sub.script_path
    return [_component(dict(opts), version, tool, sub, k, command) for k, opts in enumerate(sub.components)]


def job_desc_for(submission_or_argv: Submission | list[str] | tuple[str, ...], version: Version | tuple[int, ...],
                 script_text: str | None = None, component: int = 0) -> JobDesc:
    """The job_desc of one component: from a command line ``[tool, *args]`` (see :func:`job_descs_for`)
    or from an already parsed sbatch :class:`Submission` (a batch job)."""
    if isinstance(submission_or_argv, Submission):
        sub = submission_or_argv
        return _component(dict(sub.components[component]), as_version(tuple(version)), "sbatch", sub, component, None)
    return job_descs_for(submission_or_argv, version, script_text)[component]


__all__ = ["JobDesc", "JobDescValue", "job_desc_for", "job_descs_for", "strip_interactive", "FIELDS", "MODEL_FIELDS",
           "ModelGap", "NO_VAL", "NO_VAL16", "NO_VAL64", "INFINITE", "MEM_PER_CPU"]
