# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu admin install`` / ``admin check``: put the node hooks on a node the way slurm.conf needs
them, and verify such an installation (docs/admin.md).

install: the shims of ``prolog_epilog/`` (``prolog.sh``, ``epilog.sh``, ``task_prolog.sh``,
``epilog_ctld.sh``), each with a settings block inserted after its header (the entry points of this
installation, the config file, an optional ``hooks.env`` sourced at start), a ``hooks.conf`` (only
when missing: an admin's edits are kept), ``hooks.env`` (when environment settings are given), and
the compiled ``job_submit.lua`` in Slurm's configuration directory. Every file is written as a
temporary file (``O_EXCL|O_NOFOLLOW``) in a directory walked from ``/`` without following symlinks and
renamed into place, root's (when run as root), 0755 for the shims, 0644 for the rest.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from slurm_gpu.adapters import fs
from slurm_gpu.errors import SlurmGpuError

DEFAULT_PREFIX = "/etc/slurm-gpu"
# The node hooks' launcher: ``<prefix>/slurm-gpu-hook prolog|epilog|task-prolog``, run by the shims. Not
# the console scripts, whose wrapper imports re (~5-8 ms of every run, measured in benchmarks/bench_hooks.py),
# nor ``python -m`` (runpy, as much again); -I: no PYTHON* variable, no user site, no script directory.
LAUNCHER = "slurm-gpu-hook"
LAUNCHED = {"prolog.sh": "prolog", "epilog.sh": "epilog", "task_prolog.sh": "task-prolog"}
SHIMS = {  # installed name -> (variable naming the entry point, console script)
    "prolog.sh": ("SLURM_GPU_PROLOG", "slurm-gpu-prolog"),
    "epilog.sh": ("SLURM_GPU_EPILOG", "slurm-gpu-epilog"),
    "task_prolog.sh": ("SLURM_GPU_TASK_PROLOG", "slurm-gpu-task-prolog"),
    "epilog_ctld.sh": ("SLURM_GPU_EPILOG_CTLD", "slurm-gpu-epilog-ctld"),
}
SLURM_KEYS = (("Prolog", "prolog.sh"), ("Epilog", "epilog.sh"), ("TaskProlog", "task_prolog.sh"),
              ("EpilogSlurmctld", "epilog_ctld.sh"))
MARK = "# --- slurm-gpu admin install settings ---"
# Start no Python where the entry point would do nothing (shell builtins only: Slurm gives no PATH).
# Prolog/Epilog: a job without GPUs. TaskProlog (once per task): the prolog left no task file.
_NO_GPUS = ['case "${SLURM_JOB_GPUS:-}${CUDA_VISIBLE_DEVICES:-}" in ""|NoDevFiles) exit 0;; esac  # no GPUs']
FAST_PATH = {
    "prolog.sh": _NO_GPUS,
    "epilog.sh": _NO_GPUS,
    "task_prolog.sh": [
        "# the task directory: $SLURM_GPU_HOOKS_TASK_DIR, else hooks.conf task_dir, else the default",
        "_sg_dir=/run/slurm-gpu/task",
        'if [ -r "$SLURM_GPU_HOOKS_CONF" ]; then',
        '  while IFS= read -r _sg_l || [ -n "$_sg_l" ]; do',
        '    case $_sg_l in',
        '      [[:space:]]*task_dir[[:space:]]*=*|task_dir[[:space:]]*=*|task_dir=*)',
        '        _sg_dir=${_sg_l#*=}; _sg_dir=${_sg_dir#"${_sg_dir%%[![:space:]]*}"}',
        '        _sg_dir=${_sg_dir%"${_sg_dir##*[![:space:]]}"};;',
        "    esac",
        '  done < "$SLURM_GPU_HOOKS_CONF"',
        "fi",
        '_sg_dir=${SLURM_GPU_HOOKS_TASK_DIR-$_sg_dir}',
        '[ -n "$_sg_dir" ] && [ -e "$_sg_dir/${SLURM_JOB_ID:-none}" ] || exit 0  # nothing left for this job',
    ],
}


_SAFE_NAME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def ctld_fast_path(checkpoint_partitions: Iterable[str] | None) -> list[str]:
    """EpilogSlurmctld: start no Python for a job the hook would do nothing for (node/requeue.py ``decide``):
    its batch shell was not killed by an early stop signal (``SLURM_JOB_EXIT_CODE2``, slurmctld's), it ran
    in no partition of a checkpoint_required class (``checkpoint_partitions``, the policy's at install
    time), and its work directory, reached through no symlink, has no checkpoint directory. Why: slurmctld
    starts the next job on the freed node only at a later scheduling pass when the EpilogSlurmctld ends
    after the node's Epilog, so even a 70 ms hook costs a back-to-back job 0.8-3 s (measured, docs/
    checkpointing.md "Cost"). Anything else (``--verbose``, a relative or unreadable work dir, a symlink on
    the way, ``..``) goes to the hook. None (the policy could not be read at install): no fast path."""
    from slurm_gpu.node.requeue import CKPT_SUBDIR, EARLY_STOP_SIGNALS

    parts = sorted(checkpoint_partitions) if checkpoint_partitions is not None else None
    if parts is None or not all(p and set(p) <= _SAFE_NAME for p in parts):
        return ["# no fast path: the policy's checkpoint_required partitions were not known at install"]
    signals = "|".join(f"*:{n}" for n in sorted(EARLY_STOP_SIGNALS))
    lines = ["# the fast path (slurm_gpu/node/install.py ctld_fast_path): no Python for a job the hook has nothing",
             "# to do with; builtins only, every value quoted",
             "_sg_fast=1",
             'case " ${SLURM_GPU_EPILOG_CTLD:-} " in *" --verbose "*) _sg_fast=;; esac',
             f"case ${{SLURM_JOB_EXIT_CODE2:-}} in {signals}) _sg_fast=;; esac  # an early stop signal"]
    if parts:
        pattern = "|".join(f"*,{p},*" for p in parts)
        lines.append(f'case ",${{SLURM_JOB_PARTITION:-}}," in {pattern}) _sg_fast=;; esac  # checkpoint_required')
    lines += ['_sg_w=${SLURM_JOB_WORK_DIR:-}',
              'case $_sg_w in /*) ;; *) _sg_fast=;; esac',
              'if [ -n "$_sg_fast" ]; then',
              '  _sg_rest=${_sg_w#/}; _sg_p=',
              '  while [ -n "$_sg_rest" ]; do',
              '    _sg_c=${_sg_rest%%/*}',
              '    case $_sg_rest in */*) _sg_rest=${_sg_rest#*/};; *) _sg_rest=;; esac',
              '    case $_sg_c in ""|.) continue;; ..) _sg_fast=; break;; esac',
              '    _sg_p=$_sg_p/$_sg_c',
              '    if [ -L "$_sg_p" ]; then _sg_fast=; break; fi',
              '  done',
              'fi',
              f'if [ -n "$_sg_fast" ] && [ -d "$_sg_w" ] && [ -x "$_sg_w" ] && [ ! -e "$_sg_w/{CKPT_SUBDIR}" ] && '
              f'[ ! -L "$_sg_w/{CKPT_SUBDIR}" ]; then',
              '  exit 0  # not a checkpointing job, and no end the hook acts on without a checkpoint',
              'fi']
    return lines


def checkpoint_partitions_of(policy: str | None) -> frozenset[str] | None:
    """The partitions of the policy's checkpoint_required classes; None when it cannot be read."""
    if not policy:
        return None
    from slurm_gpu.node.requeue import policy_facts
    from slurm_gpu.policy.load import load_policy

    try:
        return policy_facts(load_policy(policy)).checkpoint_partitions
    except Exception:  # noqa: BLE001 - install goes on; the shim then always runs the hook
        return None


# The hooks need no PrologFlags: without Alloc the Prolog runs on each node before the job's first step
# there (the batch script, an srun step), which is before any task sees a GPU. With Alloc, srun and salloc
# poll for the end of the Prolog every 0.1 s x i (src/srun allocate.c), so any Prolog at all, even
# /bin/true, adds about 100 ms to every interactive allocation (benchmarks/bench_hooks.py, docs/hooks.md).
ALLOC_NOTE = ("# PrologFlags: none needed. Keep Alloc (or Contain, which implies it) only if the site uses it for",
              "# pam_slurm_adopt or X11: srun/salloc then wait ~100 ms more per allocation for any Prolog.")


def timeout_note() -> tuple[str, ...]:
    """The Prolog/Epilog time-limit keys, per release (slurm.release.PROLOG_TIMEOUT_KEYS): a hook bounds itself
    (its alarm), so none is needed; a site that sets one names it as its release spells it."""
    from slurm_gpu.slurm.release import PROLOG_TIMEOUT_KEYS

    rows: list[str] = []
    seen: tuple[str, ...] = ()
    for first, keys in PROLOG_TIMEOUT_KEYS:
        new = [f"{k}=" for k in keys if k not in seen]
        rows.append(" and ".join(new) + (f" from Slurm {first[0]}.{first[1]:02d}" if first > (0, 0, 0) else
                                        " on every release"))
        seen = keys
    return ("# Time limits: none needed (the hooks end themselves within their alarm). A site that sets one: "
            + ", or ".join(rows) + ".",
            "# A Prolog past its limit requeues the job and drains the node; an Epilog past it drains the node.")


def entry_point_dir() -> str:
    """Where this installation's console scripts are: beside the interpreter (a venv), else on PATH."""
    here = os.path.dirname(sys.executable)
    if os.path.isfile(os.path.join(here, "slurm-gpu-prolog")):
        return here
    found = shutil.which("slurm-gpu-prolog")
    return os.path.dirname(found) if found else here


def shim_source_dir() -> Path:
    """``prolog_epilog/`` of the source tree, else ``<prefix>/share/slurm-gpu/prolog_epilog``."""
    here = Path(__file__).resolve().parents[2] / "prolog_epilog"
    return here if (here / "prolog.sh").is_file() else Path(sys.prefix) / "share" / "slurm-gpu" / "prolog_epilog"


def shim_text(source: str, name: str, prefix: str, bin_dir: str, policy: str | None,
              checkpoint_partitions: Iterable[str] | None = None) -> str:
    """The shim with its settings block after the header comment (the shims read these variables);
    ``checkpoint_partitions``: the EpilogSlurmctld shim's fast path (:func:`ctld_fast_path`)."""
    var, script = SHIMS[name]
    entry = f'"{prefix}/{LAUNCHER} {LAUNCHED[name]}"' if name in LAUNCHED else f"{bin_dir}/{script}"
    block = [MARK, f"{var}={entry}", f"SLURM_GPU_HOOKS_CONF={prefix}/hooks.conf",
             "export SLURM_GPU_HOOKS_CONF"]
    if name in ("prolog.sh", "epilog.sh"):  # the agent, when one listens there (hooks.env may name another)
        block += ["SLURM_GPU_HOOKS_AGENT=${SLURM_GPU_HOOKS_AGENT:-/run/slurm-gpu/agent.sock}",
                  "export SLURM_GPU_HOOKS_AGENT"]
    if name == "epilog_ctld.sh" and policy:
        block += [f"GPUSUB_POLICY={policy}", "export GPUSUB_POLICY"]
    block += [f"if [ -r {prefix}/hooks.env ]; then set -a; . {prefix}/hooks.env; set +a; fi"]
    block += FAST_PATH.get(name, [])
    if name == "epilog_ctld.sh":
        block += ctld_fast_path(checkpoint_partitions)
    block += [MARK.replace("---", "===")]
    lines = source.splitlines()
    at = next((i for i, ln in enumerate(lines) if ln.startswith("PATH=")), 2)
    return "\n".join(lines[:at] + block + lines[at:]) + "\n"


def launcher_text(python: str) -> str:
    return (f"#!{python} -I\n# SPDX-License-Identifier: Apache-2.0\n# slurm-gpu's node hooks launcher (docs/hooks.md); "
            "written by slurm-gpu admin install\nimport sys\n\nfrom slurm_gpu.cli.node_hooks import hook_main\n\n"
            "sys.exit(hook_main(sys.argv[1:]))\n")


AGENT_UNIT = "slurm-gpu-hook-agent.service"


def agent_unit_text(bin_dir: str) -> str:
    """A systemd unit for the optional agent (slurm_gpu/node/agent.py): before slurmd, so that the
    first job finds it; restarted on failure; the hooks run without it whenever it is down."""
    return ("# SPDX-License-Identifier: Apache-2.0\n# slurm-gpu's node hook agent (docs/hooks.md); written by "
            "slurm-gpu admin install\n[Unit]\n"
            "Description=slurm-gpu node hook agent (Prolog/Epilog without a Python start)\n"
            "Before=slurmd.service\n\n[Service]\nType=simple\n"
            f"ExecStart={bin_dir}/slurm-gpu-hook-agent --socket /run/slurm-gpu/agent.sock\n"
            "Restart=on-failure\nRestartSec=5\n"
            "# a restart must not kill what a run started (a job's MPS daemon lives until its Epilog)\n"
            "KillMode=process\n\n[Install]\nWantedBy=multi-user.target\n")


def hooks_conf_text(policy: str | None, settings: Mapping[str, str]) -> str:
    from slurm_gpu.node.model import DEFAULTS

    out = ["# slurm-gpu node hooks (docs/hooks.md); written by slurm-gpu admin install, kept on reinstall"]
    values = dict(settings)
    if policy:
        values.setdefault("policy", policy)
    for key, value in values.items():
        if key not in DEFAULTS:
            raise SlurmGpuError(f"hooks.conf: unknown key {key!r}")
        out.append(f"{key} = {value}")
    return "\n".join(out) + "\n"


def _write(dir_fd: int, name: str, data: bytes, mode: int) -> bool:
    """Atomic replace (never through a symlink); False when the file already holds ``data``."""
    try:
        if fs.read_capped(dir_fd, name, limit=len(data) + 1, missing_ok=True, trusted=True) == data and stat.S_IMODE(
                os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode) == mode:
            return False
    except OSError:
        pass
    fs.write_atomic(dir_fd, name, data, mode=mode, sync=True)
    return True


@dataclass
class Installed:
    prefix: str
    written: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    job_submit: str | None = None


def install(prefix: str, policy: str | None, *, bin_dir: str | None = None, job_submit_dir: str | None = None,
            settings: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None) -> Installed:
    """Install into ``prefix`` (see the module doc). ``job_submit_dir`` None: no job_submit.lua."""
    prefix = os.path.abspath(prefix)
    policy = os.path.abspath(policy) if policy else None
    bin_dir = bin_dir or entry_point_dir()
    src = shim_source_dir()
    res = Installed(prefix)
    job_submit = os.path.abspath(job_submit_dir) if job_submit_dir and policy else None
    if job_submit is not None:  # checked before anything is written, by the prefix's rule (fs.STRICT)
        try:
            os.close(fs.open_dir(job_submit))
        except OSError as exc:
            raise SlurmGpuError(f"--job-submit-dir {job_submit}: {exc.strerror or exc} (must be root's, no "
                                "symlink, not writable by others)") from None
    try:
        fd = fs.open_dir(prefix, create=True, mode=0o755)
    except OSError as exc:
        raise SlurmGpuError(f"{prefix}: {exc.strerror or exc} (must be root's, no symlink, not writable by others)"
                            ) from None
    if any(c.isspace() for c in prefix + sys.executable):
        raise SlurmGpuError(f"{prefix}, {sys.executable}: the shims split their entry point on spaces; "
                            "install into a path without blanks")
    try:
        launcher = launcher_text(sys.executable).encode()
        (res.written if _write(fd, LAUNCHER, launcher, 0o755) else res.kept).append(LAUNCHER)
        unit = agent_unit_text(bin_dir).encode()
        (res.written if _write(fd, AGENT_UNIT, unit, 0o644) else res.kept).append(AGENT_UNIT)
        ckpt_parts = checkpoint_partitions_of(policy)
        for name in SHIMS:
            text = shim_text((src / name).read_text(encoding="utf-8"), name, prefix, bin_dir, policy, ckpt_parts)
            (res.written if _write(fd, name, text.encode(), 0o755) else res.kept).append(name)
        conf = hooks_conf_text(policy, settings or {}).encode()
        kept_conf = fs.read_capped(fd, "hooks.conf", limit=1 << 16, missing_ok=True, trusted=True)
        if settings is not None or kept_conf is None:
            (res.written if _write(fd, "hooks.conf", conf, 0o644) else res.kept).append("hooks.conf")
        else:
            res.kept.append("hooks.conf")
        if env:
            bad = [k for k, v in env.items() if not k.replace("_", "a").isalnum() or any(c in v for c in '"\\`\n')
                   or "$(" in v]
            if bad:
                raise SlurmGpuError(f"hooks.env: bad setting {bad[0]!r}")
            body = "".join(f'{k}="{v}"\n' for k, v in env.items()).encode()  # ${VAR} expands (per node)
            (res.written if _write(fd, "hooks.env", body, 0o644) else res.kept).append("hooks.env")
        elif fs.read_capped(fd, "hooks.env", limit=1 << 16, missing_ok=True, trusted=True) is not None:
            fs.remove(fd, "hooks.env")
    finally:
        os.close(fd)
    if job_submit is not None and policy:  # the directory is walked and checked again as it is written
        from slurm_gpu.emit.install_lua import SCRIPT_NAME, install_policy

        dst = os.path.join(job_submit, SCRIPT_NAME)
        install_policy(policy, dst)
        res.job_submit = dst
    return res


def load_with_topologies(policy_file: str) -> tuple[object, dict[str, object]]:
    """The policy and the topology of each node type (ClickException-free: SlurmGpuError, one line)."""
    from slurm_gpu.errors import PolicyError, TopologyError
    from slurm_gpu.policy import load_policy
    from slurm_gpu.topology import load_topology_file

    try:
        policy = load_policy(policy_file)
    except PolicyError as exc:
        raise SlurmGpuError(f"{exc}".splitlines()[0]) from None
    topologies: dict[str, object] = {}
    for nt in policy.node_types:
        try:
            topologies[nt.name] = load_topology_file(nt.topology)
        except (OSError, TopologyError) as exc:
            raise SlurmGpuError(f"{policy_file}: node_types.{nt.name}.topology: {nt.topology}: "
                                f"{getattr(exc, 'strerror', None) or str(exc).splitlines()[0]}") from None
    return policy, topologies


def slurm_lines(prefix: str, policy_file: str | None, device_dir: str = "/dev") -> str:
    """The slurm.conf and gres.conf lines for this installation (the node and gres lines from the emitter)."""
    out = ["# ==> slurm.conf <==", *(f"{key}={prefix}/{name}" for key, name in SLURM_KEYS), *ALLOC_NOTE,
           *timeout_note(),
           f"# On each GPU node, optionally: systemctl enable --now {prefix}/{AGENT_UNIT} (docs/hooks.md, the agent)"]
    if policy_file:
        from slurm_gpu.emit import gres_conf, slurm_conf

        policy, topologies = load_with_topologies(policy_file)
        source = os.path.basename(policy_file)
        out += ["JobSubmitPlugins=lua", slurm_conf.slurm_conf(policy, topologies, source).rstrip("\n"),  # type: ignore[arg-type]
                "# ==> gres.conf <==", gres_conf.gres_conf(policy, topologies, device_dir, source).rstrip("\n")]  # type: ignore[arg-type]
    return "\n".join(out) + "\n"


# ---- check --------------------------------------------------------------------------------------

def _file_check(path: str, mode: int, executable: bool) -> str | None:
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"{exc.strerror or exc}"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (a symlink?)"
    if os.geteuid() == 0 and st.st_uid != 0:
        return f"owned by uid {st.st_uid}, not root"
    if st.st_mode & 0o022:
        return f"mode {stat.S_IMODE(st.st_mode):o}: writable by group or others"
    if executable and not st.st_mode & 0o111:
        return f"mode {stat.S_IMODE(st.st_mode):o}: not executable"
    return None


def _agent_check(path: str) -> tuple[bool, str]:
    """The optional agent: not running is fine (the hooks run without it); a socket there that is not
    root's, or that nobody answers on, is reported (the hooks then run without it, and say nothing)."""
    import socket

    try:
        st = os.lstat(path)
    except OSError:
        return True, f"hook agent: not running ({path} absent; optional, docs/hooks.md)"
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o077:
        return False, f"hook agent: {path} is not a socket of root's with mode 0600; the hooks will not use it"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(2)
        try:
            s.connect(path)
        except OSError as exc:
            return False, f"hook agent: {path}: nobody listening ({exc.strerror or exc}); the hooks run without it"
    return True, f"hook agent: listening on {path}"


def check(prefix: str, node: str | None = None, env: Mapping[str, str] | None = None) -> list[tuple[bool, str]]:
    """(ok, line) per check: files, modes, entry points, hooks.conf, the MIG layout vs. the policy."""
    env = os.environ if env is None else env
    prefix = os.path.abspath(prefix)
    out: list[tuple[bool, str]] = []
    for name in (*SHIMS, LAUNCHER, "hooks.conf"):
        path = os.path.join(prefix, name)
        executable = name in SHIMS or name == LAUNCHER
        why = _file_check(path, 0o755 if executable else 0o644, executable)
        out.append((why is None, f"{path}: " + (why or "present, root's, not writable by others")))
    for name, (var, script) in SHIMS.items():
        path = os.path.join(prefix, name)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError:
            continue
        entry = next((ln.split("=", 1)[1].strip('"').split()[0] for ln in text.splitlines()
                      if ln.startswith(f"{var}=") and ln.split("=", 1)[1].strip('"').split()), None)
        exe = entry or shutil.which(script, path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        good = bool(exe) and os.path.isfile(str(exe)) and os.access(str(exe), os.X_OK)
        out.append((good, f"{name}: entry point {exe or script + ' (not on the default PATH)'}"
                    + (" executable" if good else " missing or not executable")))
    from slurm_gpu.node.runner import load_config

    cfg, problems = load_config({"SLURM_GPU_HOOKS_CONF": os.path.join(prefix, "hooks.conf")})
    out.append((not problems, "hooks.conf: " + ("; ".join(problems) if problems else "parses")))
    for mod in ("slurm_gpu.cli.node_hooks", "slurm_gpu.node.runner", "slurm_gpu.node.share_steps"):
        try:
            __import__(mod)
            out.append((True, f"import {mod}: ok"))
        except Exception as exc:  # noqa: BLE001 - reported as a failed check
            out.append((False, f"import {mod}: {type(exc).__name__}: {exc}"))
    out.append(_agent_check(env.get("SLURM_GPU_HOOKS_AGENT") or "/run/slurm-gpu/agent.sock"))
    out.extend(_mig_checks(cfg, node or env.get("SLURMD_NODENAME") or os.uname().nodename.split(".")[0]))
    return out


def _mig_checks(cfg: Mapping[str, object], node: str) -> Iterable[tuple[bool, str]]:
    path = str(cfg.get("policy") or "")
    if not path:
        return [(True, "MIG layout: no policy in hooks.conf; not checked")]
    try:
        from slurm_gpu.policy import load_policy

        policy = load_policy(path)
    except Exception as exc:  # noqa: BLE001
        return [(False, f"policy {path}: {str(exc).splitlines()[0]}")]
    from slurm_gpu.sharing import mig

    nt = mig.node_type_of(policy, node)
    layout = mig.default_layout(nt) if nt is not None else None
    if nt is None or layout is None:
        return [(True, f"MIG layout: node {node} " + ("is in no node type" if nt is None else
                                                      f"({nt.name}) leaves MIG alone") + "; not checked")]
    try:
        from slurm_gpu.adapters import gpu_config

        gpus = list(range(nt.gpus))
        states, geo = gpu_config.read_mig(gpus, timeout_s=20)
        bad = mig.drifted(states, layout, geo, gpus)
    except Exception as exc:  # noqa: BLE001 - NVML missing/no driver: reported, not a failure of the install
        return [(True, f"MIG layout: NVML not usable ({type(exc).__name__}); not checked")]
    if bad:
        return [(False, f"MIG layout: GPU {','.join(map(str, bad))} not in the declared {layout.describe()} "
                        f"({nt.name}, mig_mode {nt.mig_mode})")]
    return [(True, f"MIG layout: {len(gpus)} GPU(s) in the declared {layout.describe()} ({nt.name})")]


__all__ = ["DEFAULT_PREFIX", "install", "check", "slurm_lines", "load_with_topologies", "Installed"]
