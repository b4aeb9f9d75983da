# SPDX-License-Identifier: Apache-2.0
"""The node-side hooks' pure part: configuration, the job and its GPUs, and the extension point.

Everything here takes data and returns data (the hook runner, slurm_gpu/node/runner.py, does the
I/O). It is imported by every Prolog/Epilog run, so it stays off ``typing``/``dataclasses`` at run time.

Extension point (docs/hooks.md, "Steps")
----------------------------------------
A hook run is an ordered tuple of *steps*. A step is any object with::

    name: str                                  # key of its slice of the per-job state, and in log lines
    def prolog(self, ctx: HookContext) -> None  # set up, in tuple order
    def epilog(self, ctx: HookContext) -> None  # tear down, in REVERSE tuple order

The runner calls each step in turn and catches whatever it raises, so one step's fault never stops
the others. A step reports through ``ctx`` or by raising:

- ``ctx.state[step.name] = {...}``: JSON-able data the prolog keeps for the epilog (root-owned
  per-job file). In the epilog ``ctx.state.get(step.name)`` may be missing (prolog never ran, state
  file corrupt, epilog run twice): a step must then do what it can without it.
- ``ctx.task_lines.append("export NAME=value")``: lines the TaskProlog prints for the job's tasks
  (``export``/``unset``/``print`` only).
- ``raise JobSetupError(msg)``: the job asked for something it cannot have (its own fault): the
  prolog still exits 0 and the TaskProlog turns the message into a failed task.
- ``raise HealthFailure(msg)`` or ``ctx.failures.append(msg)``: the hardware is sick: the node is
  drained with reason ``slurm-gpu: <msg>``.
- ``raise Unavailable(msg)``: NVML/driver/tool not usable (missing, no permission, timeout): logged,
  nothing drained.
- anything else: logged as an internal error, nothing drained.
- a step with ``fails_job = True`` (MIG, MPS: isolation the job asked for) cannot fail open: in the
  prolog *every* exception of it, Unavailable, HealthFailure and bugs included, is a JobSetupError (the
  job fails, nothing drained); its epilog still runs. So does a prolog that runs out of time for a job
  whose comment asks for MIG or MPS.

``ctx.node`` is the NVML adapter (a ``GpuNode``: slurm_gpu/adapters/gpu_node.py ``NvmlNode``) or None when NVML is
not usable; ``ctx.gpus`` are the job's GPUs, mapped from Slurm's ids to NVML index, minor number, PCI
bus id and UUID. Steps touch only ``ctx.gpus``.
"""

from __future__ import annotations

from slurm_gpu.digits import is_digits
from slurm_gpu.yesno import yes_no

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a hook starts for every job)
if TYPE_CHECKING:  # no typing import at run time: a hook starts for every job
    from collections.abc import Callable, Mapping
    from typing import Protocol, TypedDict

    from slurm_gpu.jsontypes import JsonObject
    from slurm_gpu.node.health import Reading
    from slurm_gpu.node.stats import Sample

    class HookConfig(TypedDict):
        """The hooks' settings (:func:`parse_config`): one key per ``DEFAULTS`` entry, typed by its kind
        (path and word: str, int: int, bool: bool, ints: a tuple of int)."""

        log: str
        state_dir: str
        task_dir: str
        jobmap_dir: str
        accounting_file: str
        textfile_dir: str
        scontrol: str
        kmsg: str
        drain_timeout_s: int
        nvml_timeout_s: int
        kill_grace_s: int
        health_in_prolog: bool
        accounting: bool
        gpu_ids: str
        xid_drain: tuple[int, ...]
        policy: str
        mps_dir: str
        mps_control: str
        mps_path: str
        admin_comment: bool
        sacct: str
        sacctmgr: str
        gres_conf: str

    class GpuNode(Protocol):
        """The NVML adapter (slurm_gpu/adapters/gpu_node.py ``NvmlNode``) as the steps see it."""

        def devices(self) -> tuple[GpuId, ...]: ...
        def reading(self, gpu: GpuId) -> Reading: ...
        def compute_pids(self, gpu: GpuId) -> tuple[int, ...]: ...
        def accounting_mode(self, gpu: GpuId) -> bool | None: ...
        def set_accounting(self, gpu: GpuId, on: bool) -> None: ...
        def clear_accounting(self, gpu: GpuId) -> None: ...
        def samples(self, gpu: GpuId) -> list[Sample]: ...
        def energy_mj(self, gpu: GpuId) -> int | None: ...
        def mig_enabled(self) -> tuple[int, ...]: ...
        def mig_devices(self) -> tuple[MigDevice, ...]: ...
        def close(self) -> None: ...

    def _as_config(cfg: dict[str, object]) -> HookConfig: ...
else:
    def _as_config(cfg):  # the keys are DEFAULTS' and each value its kind's (_value; tests/node check both)
        return cfg

if TYPE_CHECKING:
    class Step(Protocol):
        name: str

        def prolog(self, ctx: HookContext) -> None: ...

        def epilog(self, ctx: HookContext) -> None: ...


class JobSetupError(Exception):
    """The job's own request cannot be served: the job fails, the node stays in service."""


class HealthFailure(Exception):
    """A real GPU health failure: the node is drained with this message as the reason."""


class Unavailable(Exception):
    """NVML, the driver or a tool cannot be used (missing, not loaded, no permission, hung, corrupt)."""


# key -> (kind, default); kind: "path" ("" = feature off), "int", "bool", "ints", "word"
DEFAULTS: dict[str, tuple[str, object]] = {
    "log": ("path", "/var/log/slurm-gpu/node-hooks.log"),
    "state_dir": ("path", "/run/slurm-gpu/jobs"),
    "task_dir": ("path", "/run/slurm-gpu/task"),
    "jobmap_dir": ("path", "/run/slurm-gpu/dcgm-job-map"),
    "accounting_file": ("path", "/var/log/slurm-gpu/gpu-jobs.jsonl"),
    "textfile_dir": ("path", "/var/lib/prometheus/node-exporter"),
    "scontrol": ("path", "scontrol"),
    "kmsg": ("path", "/dev/kmsg"),
    "drain_timeout_s": ("int", 15),
    "nvml_timeout_s": ("int", 60),
    "kill_grace_s": ("int", 5),
    "health_in_prolog": ("bool", False),
    "accounting": ("bool", True),
    "gpu_ids": ("word", "index"),
    # Xids that mean the hardware needs attention (NVIDIA's Xid catalogue): 48 DBE, 61/62 internal
    # micro-controller halt, 64 row-remap failure, 74 NVLink, 79 fallen off the bus, 95 uncontained ECC,
    # 119/120 GSP, 140 unrecovered ECC. Others (13, 31, 43, 45, 94: application faults) are logged only.
    "xid_drain": ("ints", (48, 61, 62, 64, 74, 79, 95, 119, 120, 140)),
    # per-job MIG and MPS (slurm_gpu/node/share_steps.py; docs/mig_mps.md): the site policy ("" = off)
    "policy": ("path", ""),
    "mps_dir": ("path", "/run/slurm-gpu/mps"),
    "mps_control": ("path", "nvidia-cuda-mps-control"),
    "mps_path": ("path", "/usr/bin:/bin"),
    # the job's GPU summary in its AdminComment (slurm_gpu/node/summary.py; docs/hooks.md): on/off, clients
    "admin_comment": ("bool", True), "sacct": ("path", "sacct"), "sacctmgr": ("path", "sacctmgr"),
    # the node's gres.conf, for the whole-GPU identity check ("": gres.conf beside $SLURM_CONF, else
    # /etc/slurm/gres.conf): identity_problems
    "gres_conf": ("path", ""),
}
WORDS = {"gpu_ids": ("index", "minor")}
ENV_CONF = "SLURM_GPU_HOOKS_CONF"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # Slurm gives the hooks no PATH
DEFAULT_CONF = "/etc/slurm-gpu/hooks.conf"
ENV_PREFIX = "SLURM_GPU_HOOKS_"  # SLURM_GPU_HOOKS_STATE_DIR=... overrides state_dir (tests, wrappers)
MAX_JOB_ID = 10**12
MAX_GPUS = 1024


def _value(kind: str, text: str) -> object:
    if kind == "path":
        return text
    if kind == "int":
        if not (text.isascii() and text.isdigit() and len(text) <= 6):
            raise ValueError(f"expected a whole number, got {text[:40]!r}")
        return int(text)
    if kind == "bool":
        flag = yes_no(text)
        if flag is None:
            raise ValueError(f"expected yes/no, got {text[:40]!r}")
        return flag
    if kind == "ints":
        out = tuple(int(t) for t in text.replace(" ", "").split(",") if t.isascii() and t.isdigit())
        if len(out) != len([t for t in text.replace(" ", "").split(",") if t]):
            raise ValueError(f"expected a comma list of numbers, got {text[:40]!r}")
        return out
    return text


def parse_config(text: str, where: str, env: Mapping[str, str]) -> tuple[HookConfig, list[str]]:
    """``key = value`` lines (``#`` comments) plus ``SLURM_GPU_HOOKS_<KEY>`` overrides -> (config, problems).
    A bad line is one problem (``file:line: ...``) and keeps the default."""
    cfg: dict[str, object] = {k: d for k, (_, d) in DEFAULTS.items()}
    problems: list[str] = []
    entries: list[tuple[str, str, str]] = []
    for n, raw in enumerate(text.splitlines()[:1000], 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, eq, value = line.partition("=")
        if not eq:
            problems.append(f"{where}:{n}: expected key = value")
            continue
        entries.append((f"{where}:{n}", key.strip(), value.strip()))
    for key in DEFAULTS:
        if ENV_PREFIX + key.upper() in env:
            entries.append((ENV_PREFIX + key.upper(), key, env[ENV_PREFIX + key.upper()].strip()))
    for at, key, value in entries:
        if key not in DEFAULTS:
            problems.append(f"{at}: unknown key {key[:40]!r}")
            continue
        try:
            v = _value(DEFAULTS[key][0], value)
            if key in WORDS and v not in WORDS[key]:
                raise ValueError(f"expected one of {', '.join(WORDS[key])}, got {value[:40]!r}")
        except ValueError as exc:
            problems.append(f"{at}: {key}: {exc}")
            continue
        cfg[key] = v
    return _as_config(cfg), problems


class Job:
    """The job as the hook's environment describes it."""

    __slots__ = ("job_id", "uid", "node", "gpu_tokens", "problems", "mig_uuids")

    def __init__(self, job_id: int, uid: int | None, node: str, gpu_tokens: tuple[str, ...],
                 problems: tuple[str, ...] = (), mig_uuids: tuple[str, ...] = ()) -> None:
        self.job_id, self.uid, self.node = job_id, uid, node
        self.gpu_tokens, self.problems = gpu_tokens, problems
        self.mig_uuids = mig_uuids  # the MIG devices of Slurm's CUDA_VISIBLE_DEVICES (AutoDetect=nvml)


def _int(text: str | None, hi: int) -> int | None:
    t = (text or "").strip()
    return int(t) if t.isascii() and t.isdigit() and len(t) <= 13 and int(t) <= hi else None


def _old_mig_uuid(tok: str) -> bool:
    head, *ids = tok.split("/")
    return len(ids) == 2 and all(is_digits(i) and len(i) <= 3 for i in ids) and head.replace("-", "").isalnum()


def gpu_tokens(text: str) -> tuple[tuple[str, ...], list[str]]:
    """Slurm's GPU id list (``0,1``, ``4-7``, or UUIDs: ``GPU-<uuid>``, ``MIG-<uuid>``, ``MIG-GPU-<uuid>/GI/CI``;
    25.11+ Prolog/Epilog, 26.05 gres.conf Flags=env_uuid) -> (ids as text, problems)."""
    out: list[str] = []
    problems: list[str] = []
    for tok in text.strip().split(","):
        tok = tok.strip()
        if not tok:
            continue
        lo, dash, hi = tok.partition("-")
        if tok.isascii() and tok.isdigit() and len(tok) <= 5:
            out.append(str(int(tok)))
        elif dash and is_digits(lo) and is_digits(hi) and len(lo) <= 5 and len(hi) <= 5 and int(lo) <= int(hi):
            out.extend(str(i) for i in range(int(lo), min(int(hi), int(lo) + MAX_GPUS) + 1))
        elif tok.startswith(("GPU-", "MIG-")) and len(tok) <= 64 and tok.replace("-", "").isalnum():
            out.append(tok)
        elif tok.startswith("MIG-GPU-") and len(tok) <= 64 and _old_mig_uuid(tok):
            out.append(tok)  # the pre-R470 MIG spelling, MIG-GPU-<uuid>/<GI>/<CI>
        else:
            problems.append(f"GPU id {tok[:40]!r} not understood; skipped")
        if len(out) > MAX_GPUS:
            problems.append(f"more than {MAX_GPUS} GPU ids; the rest skipped")
            break
    return tuple(dict.fromkeys(out[:MAX_GPUS])), problems


def job_from_env(env: Mapping[str, str]) -> Job | None:
    """SLURM_JOB_ID and the job's GPUs: ``SLURM_JOB_GPUS`` (global indices; 22.05-26.05 give it to the
    Prolog/Epilog), else ``CUDA_VISIBLE_DEVICES`` (global ids outside the job's cgroup; UUIDs in the 25.11+
    Prolog/Epilog and with 26.05's env_uuid, which map_gpus finds by UUID). None: no job."""
    job_id = _int(env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID"), MAX_JOB_ID)
    if job_id is None:
        return None
    text = env.get("SLURM_JOB_GPUS", "").strip() or env.get("CUDA_VISIBLE_DEVICES", "").strip()
    if text == "NoDevFiles":
        text = ""
    tokens, problems = gpu_tokens(text)
    cvd, _ = gpu_tokens(env.get("CUDA_VISIBLE_DEVICES", ""))
    return Job(job_id, _int(env.get("SLURM_JOB_UID"), 1 << 31), env.get("SLURMD_NODENAME", "")[:200],
               tokens, tuple(problems), tuple(t for t in cvd if t.startswith("MIG-")))


class GpuId:
    """One GPU's identities: NVML index, /dev/nvidia minor number, PCI bus id, UUID; ``slurm_id`` is the
    id Slurm gave the hook."""

    __slots__ = ("slurm_id", "index", "minor", "bus_id", "uuid")

    def __init__(self, slurm_id: str, index: int | None, minor: int | None, bus_id: str, uuid: str) -> None:
        self.slurm_id, self.index, self.minor, self.bus_id, self.uuid = slurm_id, index, minor, bus_id, uuid

    def label(self) -> str:
        return f"GPU {self.index if self.index is not None else self.slurm_id}" + (
            f" ({self.bus_id})" if self.bus_id else "")

    def as_dict(self) -> JsonObject:
        return {"slurm_id": self.slurm_id, "index": self.index, "minor": self.minor, "bus_id": self.bus_id,
                "uuid": self.uuid}


class MigDevice:
    """One MIG device as the node's NVML reports it: its parent GPU's NVML index, GPU- and compute-instance
    ids, and its UUID (``MIG-<uuid>``, the id Slurm's gpu/nvml puts in CUDA_VISIBLE_DEVICES)."""

    __slots__ = ("parent", "gi", "ci", "uuid")

    def __init__(self, parent: int, gi: int, ci: int, uuid: str) -> None:
        self.parent, self.gi, self.ci, self.uuid = parent, gi, ci, uuid


def mig_view(job: Job, migs: tuple[MigDevice, ...], devices: tuple[GpuId, ...]) -> tuple[list[str], list[str]]:
    """The job's MIG slices as the hooks see them, checked against Slurm's own view (the MIG UUIDs its gpu/nvml
    put in CUDA_VISIBLE_DEVICES, one per SLURM_JOB_GPUS id): (one description per slice: UUID, parent GPU's
    index, minor, bus id and UUID, GPU- and compute-instance id; the disagreements). A disagreement is the
    node's misconfiguration (slurmd's detected inventory is not the driver's now: MIG changed after slurmd
    started, or gres.conf names other devices), never the job's fault."""
    by_uuid = {m.uuid: m for m in migs}
    by_index = {d.index: d for d in devices}
    slices: list[str] = []
    problems: list[str] = []
    for u in job.mig_uuids:
        m = by_uuid.get(u)
        parent = by_index.get(m.parent) if m is not None else None
        if m is None or parent is None:
            problems.append(f"Slurm gave the job MIG device {u}, which this node's NVML does not have "
                            f"({len(migs)} MIG devices here)")
            continue
        slices.append(f"{u}=GPU {m.parent}/minor {parent.minor}/{parent.bus_id or '?'}/{parent.uuid or '?'} "
                      f"GI {m.gi} CI {m.ci}")
    ids = [t for t in job.gpu_tokens if is_digits(t)]
    if job.mig_uuids and ids and len(ids) != len(job.mig_uuids):
        problems.append(f"SLURM_JOB_GPUS holds {len(ids)} ids, CUDA_VISIBLE_DEVICES {len(job.mig_uuids)} MIG devices")
    return slices, problems


MAX_GRES_CONF = 1 << 20  # bytes of gres.conf read; a bigger one is not checked


def slurm_gpu_minors(gres_conf: str, node: str) -> tuple[int, ...] | None:
    """Slurm's GPU ids on ``node`` -> /dev/nvidia minors, from gres.conf: the ``File=`` devices of the
    ``Name=gpu`` lines that apply to the node, in file order, as slurmd numbers them (the id of a GPU is its
    position; docs/hooks.md "Whole-GPU identity"). None where that cannot be told: the node autodetects
    (``AutoDetect=nvml``: slurmd numbers in NVML's order), a line names MIG devices (``MultipleFiles=``) or
    a device that is not ``/dev/nvidiaN``, or no line names a file."""
    import re

    from slurm_gpu.hostlist import HostlistError, expand_hostlist

    minors: list[int] = []
    try:
        for raw in gres_conf.splitlines():
            words = raw.split("#", 1)[0].split()
            fields = dict(w.split("=", 1) for w in words if "=" in w)
            if not fields:
                continue
            names = fields.get("NodeName")
            if names is not None and node not in expand_hostlist(names):
                continue
            if fields.get("AutoDetect", "off").lower() not in ("off", "") or "MultipleFiles" in fields:
                return None
            if fields.get("Name") != "gpu":
                continue
            files = expand_hostlist(fields["File"]) if fields.get("File") else []
            if not files:
                return None
            for f in files:
                m = re.fullmatch(r"/dev/nvidia([0-9]{1,4})", f)
                if m is None or len(minors) >= MAX_GPUS:
                    return None
                minors.append(int(m.group(1)))
    except (HostlistError, ValueError):
        return None
    return tuple(minors) or None


def identity_problems(gpus: tuple[GpuId, ...], minors: tuple[int, ...] | None, scheme: str = "index") -> list[str]:
    """Where the GPU the hooks took for a Slurm id is not the device gres.conf gives that id (issue 20 item 6):
    one line each, for the log (the node is misconfigured; no job fails for it, nothing drains)."""
    if not minors:
        return []
    out = []
    for g in gpus:
        if not is_digits(g.slurm_id) or g.minor is None:
            continue
        i = int(g.slurm_id)
        if i >= len(minors):
            out.append(f"Slurm's GPU {i} is past the {len(minors)} devices gres.conf lists for this node")
        elif minors[i] != g.minor:
            out.append(f"Slurm's GPU {i} is /dev/nvidia{minors[i]} (gres.conf File=), but the hooks took "
                       f"/dev/nvidia{g.minor} ({g.label()}) for it (hooks.conf gpu_ids = {scheme}): they check "
                       "and account another GPU than the job's; list gres.conf's files in NVML's order (index) "
                       "or by minor (minor)")
    return out


def map_gpus(tokens: tuple[str, ...], devices: tuple[GpuId, ...] | None,
             scheme: str) -> tuple[tuple[GpuId, ...], list[str]]:
    """Slurm's ids -> the node's GPUs (``scheme``: ``index`` = NVML index, which is PCI bus order as
    AutoDetect=nvml numbers them; ``minor`` = /dev/nvidia<minor>, for a hand-written gres.conf
    ``File=``). ``devices`` None (no NVML): index ids are taken as they are, identities unknown.
    Returns (GPUs, ids that no GPU of the node has)."""
    if devices is None:
        known = [GpuId(t, int(t) if is_digits(t) and scheme == "index" else None, None, "", "") for t in tokens]
        return tuple(known), []
    found: list[GpuId] = []
    missing: list[str] = []
    for t in tokens:
        for d in devices:
            if (is_digits(t) and int(t) == (d.index if scheme == "index" else d.minor)) or t == d.uuid:
                found.append(GpuId(t, d.index, d.minor, d.bus_id, d.uuid))
                break
        else:
            missing.append(t)
    return tuple(found), missing


class HookContext:
    """What a step sees and reports through (see the module docstring)."""

    __slots__ = ("phase", "job", "config", "gpus", "node", "state", "failures", "task_lines", "log",
                 "wall_s", "mono_us")

    def __init__(self, phase: str, job: Job, config: HookConfig, gpus: tuple[GpuId, ...], node: GpuNode | None,
                 state: JsonObject, log: Callable[[str], None], wall_s: float, mono_us: int) -> None:
        self.phase, self.job, self.config, self.gpus, self.node = phase, job, config, gpus, node
        self.state, self.log, self.wall_s, self.mono_us = state, log, wall_s, mono_us
        self.failures: list[str] = []
        self.task_lines: list[str] = []


def drain_reason(failures: list[str]) -> str:
    """``slurm-gpu: <first>; <second> ...``: one line, no quotes, at most 200 characters."""
    text = "; ".join(dict.fromkeys(failures))
    clean = "".join(c if c.isprintable() and c not in "\"'\\" else " " for c in text)
    reason = "slurm-gpu: " + clean
    return reason if len(reason) <= 200 else reason[:197] + "..."


TASK_VERBS = ("export ", "unset ", "print ")


def task_line_ok(line: str) -> bool:
    """A TaskProlog output line we let through: ``export NAME=value``, ``unset NAME``, ``print text``."""
    if "\n" in line or "\r" in line or "\0" in line or len(line) > 4096 or not line.startswith(TASK_VERBS):
        return False
    verb, _, rest = line.partition(" ")
    if verb == "print":
        return True
    name = rest.split("=", 1)[0] if verb == "export" else rest
    return bool(name) and name.isascii() and name.replace("_", "a").isalnum() and not is_digits(name[0]) and (
        verb != "export" or "=" in rest)
