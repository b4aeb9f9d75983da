# SPDX-License-Identifier: Apache-2.0
"""The ``job_desc`` table Slurm hands job_submit.lua, modelled from gpusub's own parse (pure).

``job_desc_for(argv, version)`` gives the fields slurmctld's job_submit/lua shows the plugin for an
sbatch, salloc or srun command line: what the client (slurm_opt.c) writes into the job description,
as the Lua getter reads it. Every rule here is measured: tests/job_submit/fixtures/<version>/ holds the
dumps of job_submit/record.lua for ~150 command lines on 22.05.8 and 24.11.5, and
tests/job_submit/test_job_desc_model.py checks that this model reproduces each dump, field by field,
for the fields in :data:`MODEL_FIELDS`. See docs/job_submit.md.

Unset strings are None (Lua nil); unset numbers are Slurm's sentinels (:data:`NO_VAL`, :data:`NO_VAL16`,
:data:`NO_VAL64`); ``pn_min_memory`` carries :data:`MEM_PER_CPU` for ``--mem-per-cpu`` (Lua numbers
are doubles, so the 64-bit values are given as the floats Lua holds).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from slurm_gpu import units
from slurm_gpu.digits import is_digits
from slurm_gpu.slurm.release import Version, as_version
from slurm_gpu.slurm.sbatch import values as sv
from slurm_gpu.slurm.sbatch.parse import Submission, parse_submission

NO_VAL = 0xFFFFFFFE
NO_VAL16 = 0xFFFE
INFINITE = 0xFFFFFFFF
NO_VAL64 = float(0xFFFFFFFFFFFFFFFE)  # as Lua sees it (a double)
MEM_PER_CPU = 0x8000000000000000
NICE_OFFSET = 0x80000000

# The fields this model claims to reproduce exactly (tests compare these, and only these).
MODEL_FIELDS: tuple[str, ...] = (
    # GPUs / TRES
    "tres_per_job", "tres_per_node", "gres", "tres_per_socket", "tres_per_task", "cpus_per_tres",
    "mem_per_tres", "ntasks_per_tres", "ntasks_per_gpu", "tres_bind", "tres_freq",
    # CPUs, memory, tasks, nodes
    "cpus_per_task", "pn_min_cpus", "min_cpus", "min_mem_per_node", "min_mem_per_cpu", "pn_min_memory",
    "num_tasks", "min_nodes", "max_nodes", "ntasks_per_node", "ntasks_per_socket", "ntasks_per_core",
    "sockets_per_node", "cores_per_socket", "threads_per_core", "shared", "contiguous", "req_nodes",
    "exc_nodes", "features",
    # time
    "time_limit", "time_min",
    # where and who
    "partition", "qos", "account", "reservation", "licenses", "wckey",
    # the rest gpusub's policy reads
    "name", "comment", "array_inx", "priority", "nice", "requeue", "het_job_offset", "script_set", "argc",
    "mail_user", "immediate",
)

GRES_SLASH_SINCE: Version = (23, 11, 0)     # "gres/gpu:..." instead of "gres:gpu:..." (slurm_opt.c)
TASK_EQUALS_SINCE: Version = (24, 5, 0)     # tres_per_task "gres/gpu=N", "cpu=N" items, implicit tres_bind

# srun/salloc-only options the sbatch parser does not know: (long name, takes an argument, short)
_INTERACTIVE_ONLY = {"no-shell": False, "pty": False, "immediate": None, "unbuffered": False, "label": False}
_INTERACTIVE_SHORT = {"-I": None, "-u": False, "-l": False}


class ModelGap(ValueError):
    """A command line this model does not cover (an option the sbatch front end does not know)."""


def _strip_interactive(args: list[str]) -> list[str]:
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
        body = item
        for p in ("gres:", "gres/"):
            if body.startswith(p):
                body = body[len(p):]
        out.append(_prefix(version) + body)
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


def _component(opts: Mapping[str, str | None], version: Version, tool: str, sub: Submission, k: int,
               command: str | None) -> dict[str, Any]:
    get = opts.get
    has = opts.__contains__
    p = _prefix(version)
    jd: dict[str, Any] = {}
    # --- GPUs / TRES
    jd["tres_per_job"] = ",".join(_gpu_items(get("gpus") or "", version)) if get("gpus") else None
    per_node = []
    if get("gpus-per-node"):
        per_node += _gpu_items(get("gpus-per-node") or "", version)
    gres = _gres(get("gres") or "", version) if get("gres") else None
    if gres:
        per_node.append(gres)
    jd["tres_per_node"] = jd["gres"] = ",".join(per_node) or None
    jd["tres_per_socket"] = ",".join(_gpu_items(get("gpus-per-socket") or "", version)) \
        if get("gpus-per-socket") else None
    task_items = []
    cpt_text = get("cpus-per-task")
    gpt = get("gpus-per-task")
    if version >= TASK_EQUALS_SINCE and cpt_text:
        task_items.append(f"cpu={cpt_text}")
    if gpt:
        task_items.append(_per_task(gpt, version))
    if get("tres-per-task"):
        task_items.append(get("tres-per-task") or "")
    jd["tres_per_task"] = ",".join(task_items) or None
    jd["cpus_per_tres"] = f"{p}gpu:{get('cpus-per-gpu')}" if get("cpus-per-gpu") else None
    jd["mem_per_tres"] = f"{p}gpu:{units.parse_mem_mb(get('mem-per-gpu') or '')}" if get("mem-per-gpu") else None
    npg = get("ntasks-per-gpu") or get("ntasks-per-tres")
    jd["ntasks_per_tres"] = jd["ntasks_per_gpu"] = _num(npg, NO_VAL16)
    bind = get("tres-bind") or (f"{p if version >= GRES_SLASH_SINCE else ''}gpu:{get('gpu-bind')}"
                                if get("gpu-bind") else None)
    if bind is None and version >= TASK_EQUALS_SINCE:  # implicit per-task binding (24.05+)
        if gpt:
            bind = f"gres/gpu:per_task:{_gpu_total(gpt)}"
        elif get("tres-per-task"):
            counts = [g.count for g in sv.parse_tres(get("tres-per-task") or "") if g.name == "gpu"]
            bind = f"gres/gpu:per_task:{sum(counts)}" if counts else None
    jd["tres_bind"] = bind
    jd["tres_freq"] = f"gpu:{get('gpu-freq')}" if get("gpu-freq") else None
    # --- CPUs, tasks, nodes
    lo, hi = sv.parse_nodes_range(get("nodes") or "") if get("nodes") else (None, None)
    if lo is None and get("nodelist"):
        lo = len(sv.parse_nodelist(get("nodelist") or ""))
    jd["min_nodes"] = NO_VAL if lo is None else lo
    jd["max_nodes"] = NO_VAL if hi is None else hi
    cpt = int(cpt_text) if cpt_text else None
    spn, cps, tpc = (_num(get(n), NO_VAL16) for n in ("sockets-per-node", "cores-per-socket", "threads-per-core"))
    if get("extra-node-info"):
        bits = [int(b) for b in (get("extra-node-info") or "").split(":")]
        spn, cps, tpc = (bits + [NO_VAL16] * 3)[:3]
    if get("hint") == "nomultithread":
        tpc = 1
    ntasks = int(get("ntasks") or 0) or None
    tpn = int(get("ntasks-per-node") or 0) or None
    if ntasks is None and tpn and (version < TASK_EQUALS_SINCE or cpt is not None):
        ntasks = tpn * (lo or 1)  # 24.11 does this only with -c (measured; see docs/job_submit.md)
    if lo is None and ntasks and tpn and version >= TASK_EQUALS_SINCE:
        lo = -(-ntasks // tpn)  # 24.11: -n with --ntasks-per-node sets the minimum node count
        jd["min_nodes"] = lo
    if ntasks is None and get("extra-node-info") and NO_VAL16 not in (spn, cps, tpc):
        ntasks = spn * cps * tpc
    jd["num_tasks"] = NO_VAL if ntasks is None else ntasks
    if cpt is None and gpt and get("cpus-per-gpu"):  # cpus-per-task = cpus-per-gpu x gpus-per-task
        jd["cpus_per_task"] = int(get("cpus-per-gpu") or 0) * _gpu_total(gpt)
    else:
        jd["cpus_per_task"] = NO_VAL16 if cpt is None else cpt
    jd["pn_min_cpus"] = cpt if cpt is not None else _num(get("mincpus"), NO_VAL16)
    tasks = ntasks or (tpn or 1) * (lo or 1)
    min_cpus = tasks * (cpt or 1)
    if get("cpus-per-gpu") and version >= TASK_EQUALS_SINCE:  # 24.11: at least cpus-per-gpu x the GPUs
        gpus = _gpu_total(get("gpus") or "") if get("gpus") else \
            _gpu_total(get("gpus-per-node") or "") * (lo or 1) if get("gpus-per-node") else \
            _gpu_total(gpt) * (ntasks or 1) if gpt else \
            _gpu_total(get("gpus-per-socket") or "") * (spn if spn != NO_VAL16 else 1) * (lo or 1) \
            if get("gpus-per-socket") else 0
        if not gpus and gres:
            gpus = sum(g.count for g in sv.parse_gres(gres) if g.name == "gpu") * (lo or 1)
        min_cpus = max(min_cpus, int(get("cpus-per-gpu") or 0) * gpus)
    jd["min_cpus"] = min_cpus
    jd["ntasks_per_node"] = _num(get("ntasks-per-node"), NO_VAL16)
    jd["ntasks_per_socket"] = _num(get("ntasks-per-socket"), NO_VAL16)
    jd["ntasks_per_core"] = _num(get("ntasks-per-core"), NO_VAL16)
    jd["sockets_per_node"], jd["cores_per_socket"], jd["threads_per_core"] = spn, cps, tpc
    shared = NO_VAL16
    if has("exclusive"):
        shared = {"user": 2, "mcs": 3, "topo": 5}.get((get("exclusive") or "").lower(), 0)
    elif has("oversubscribe"):
        shared = 1
    jd["shared"] = shared
    jd["contiguous"] = 1 if has("contiguous") else 0
    jd["req_nodes"] = get("nodelist")
    jd["exc_nodes"] = get("exclude")
    jd["features"] = get("constraint")
    # --- memory
    if get("mem") is not None:
        mb = units.parse_mem_mb(get("mem") or "")
        jd["pn_min_memory"], jd["min_mem_per_node"], jd["min_mem_per_cpu"] = mb, mb, None
    elif get("mem-per-cpu") is not None:
        mb = units.parse_mem_mb(get("mem-per-cpu") or "")
        jd["pn_min_memory"], jd["min_mem_per_node"], jd["min_mem_per_cpu"] = float(MEM_PER_CPU | mb), None, mb
    else:
        jd["pn_min_memory"], jd["min_mem_per_node"], jd["min_mem_per_cpu"] = NO_VAL64, None, None
    # --- time, where, who
    jd["time_limit"] = _time(get("time"))
    jd["time_min"] = _time(get("time-min"))
    for field, opt in (("partition", "partition"), ("qos", "qos"), ("account", "account"),
                       ("reservation", "reservation"), ("licenses", "licenses"), ("wckey", "wckey"),
                       ("comment", "comment"), ("array_inx", "array"), ("mail_user", "mail-user")):
        jd[field] = get(opt)
    if get("job-name"):
        name = get("job-name")
    elif tool == "sbatch":
        name = "wrap" if sub.wrap is not None else posixpath.basename(sub.script_path or "") or "sbatch"
    elif tool == "salloc":
        name = posixpath.basename(command) if command else "no-shell"
    else:
        name = posixpath.basename(command or "")
    jd["name"] = name
    jd["priority"] = 0 if any(n == "hold" for comp in sub.components for n, _ in comp) else NO_VAL
    jd["nice"] = NICE_OFFSET + int(get("nice") or 0) if has("nice") else NO_VAL
    jd["requeue"] = 1 if has("requeue") else 0 if has("no-requeue") else NO_VAL16
    jd["het_job_offset"] = k if len(sub.components) > 1 else NO_VAL
    jd["script_set"] = tool == "sbatch" and k == 0
    if tool == "sbatch":
        jd["argc"] = 0 if sub.wrap is not None else 1 + len(sub.script_args)
    else:
        jd["argc"] = 0 if tool == "salloc" else 1
    jd["immediate"] = 0
    return jd


def job_descs_for(argv: list[str] | tuple[str, ...], version: Version | tuple[int, ...],
                  script_text: str | None = None) -> list[dict[str, Any]]:
    """Every component's job_desc (one for a normal job) for a command line ``[tool, *args]``, tool
    one of sbatch, salloc, srun. ``script_text`` is the batch script (its ``#SBATCH`` lines count).
    Raises ModelGap for what the model does not cover, OptionError for what sbatch would refuse."""
    version = as_version(tuple(version))
    tool, args = posixpath.basename(argv[0]), list(argv[1:])
    if tool not in ("sbatch", "salloc", "srun"):
        raise ModelGap(f"{tool}: only sbatch, salloc and srun are modelled")
    command = None
    if tool != "sbatch":
        args = _strip_interactive(args)
        script_text = None
    sub = parse_submission(args, {}, script_text, version=version)
    if tool != "sbatch":
        if any(n in ("wrap", "array") for comp in sub.components for n, _ in comp):
            raise ModelGap(f"{tool}: an sbatch-only option")
        command = sub.script_path
    return [_component(dict(opts), version, tool, sub, k, command) for k, opts in enumerate(sub.components)]


def job_desc_for(submission_or_argv: Submission | list[str] | tuple[str, ...], version: Version | tuple[int, ...],
                 script_text: str | None = None, component: int = 0) -> dict[str, Any]:
    """The job_desc of one component: from a command line ``[tool, *args]`` (see :func:`job_descs_for`)
    or from an already parsed sbatch :class:`Submission` (a batch job)."""
    if isinstance(submission_or_argv, Submission):
        sub = submission_or_argv
        return _component(dict(sub.components[component]), as_version(tuple(version)), "sbatch", sub, component, None)
    return job_descs_for(submission_or_argv, version, script_text)[component]


__all__ = ["job_desc_for", "job_descs_for", "MODEL_FIELDS", "ModelGap", "NO_VAL", "NO_VAL16", "NO_VAL64",
           "INFINITE", "MEM_PER_CPU"]
