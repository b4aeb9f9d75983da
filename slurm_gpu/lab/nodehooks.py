# SPDX-License-Identifier: Apache-2.0
"""The lab's node hooks, installed the way an admin would (``slurm-gpu admin install``, docs/lab.md).

``lab up`` (node hooks on unless ``SLURM_GPU_LAB_NODE_HOOKS=0``) installs the shims and a hooks.conf into
``$LAB_DIR/node-hooks`` and names the shims in slurm.conf (Prolog=, Epilog=, TaskProlog=; no PrologFlags,
as ``slurm-gpu admin install`` advises) and the controller-side checkpoint hook as EpilogSlurmctld= (unless
``SLURM_GPU_LAB_EPILOG_CTLD=0``; its log: ``$LAB_DIR/node-hooks/log/ctld/epilog-ctld.log``).
``hooks.env`` (sourced by every shim before the entry point starts) puts the
stand-in ``libnvidia-ml.so.1`` (built from tests/nvml_standin, when a C compiler is there) on
``LD_LIBRARY_PATH`` and serves ``$LAB_DIR/nvml/<node>.state``: a node without a state file is a node
without an NVIDIA driver. The three emulated nodes share one host, so every per-node directory
(per-job state, TaskProlog files, job map, MPS, textfiles) is kept apart by ``$SLURMD_NODENAME``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from slurm_gpu.lab.spec import LabHooks

ENV_SWITCH = "SLURM_GPU_LAB_NODE_HOOKS"
ENV_CTLD_SWITCH = "SLURM_GPU_LAB_EPILOG_CTLD"  # "0": the node hooks without the EpilogSlurmctld hook
CTLD_SHIM = "epilog_ctld.sh"
SUBDIR = "node-hooks"
SHIMS = {"prolog": "prolog.sh", "epilog": "epilog.sh", "task_prolog": "task_prolog.sh"}


def enabled_by_env(default: bool = True) -> bool:
    value = os.environ.get(ENV_SWITCH, "")
    return default if value == "" else value != "0"


def ctld_enabled_by_env() -> bool:
    return os.environ.get(ENV_CTLD_SWITCH, "") != "0"


def ctld_log(lab_dir: str) -> str:
    """The EpilogSlurmctld hook's log (a directory of SlurmUser's: the hook runs as SlurmUser)."""
    return os.path.join(prefix(lab_dir), "log", "ctld", "epilog-ctld.log")


def prefix(lab_dir: str) -> str:
    return os.path.join(lab_dir, SUBDIR)


def nvml_dir(lab_dir: str) -> str:
    """Where the tests put ``<node>.state`` for the stand-in library (no file: no driver on that node)."""
    return os.path.join(lab_dir, "nvml")


def wire(hooks: LabHooks, lab_dir: str) -> LabHooks:
    """``hooks`` with Prolog/Epilog/TaskProlog = the installed shims, and EpilogSlurmctld = the installed
    controller-side hook unless switched off (paths given explicitly win)."""
    if not hooks.node_hooks:
        return hooks
    pre = prefix(lab_dir)
    ctld = hooks.epilog_slurmctld or (os.path.join(pre, CTLD_SHIM) if ctld_enabled_by_env() else None)
    return replace(hooks, prolog=hooks.prolog or os.path.join(pre, SHIMS["prolog"]),
                   epilog=hooks.epilog or os.path.join(pre, SHIMS["epilog"]),
                   task_prolog=hooks.task_prolog or os.path.join(pre, SHIMS["task_prolog"]), epilog_slurmctld=ctld)


def standin_lib_dir(repo: Path) -> str | None:
    """The directory of the stand-in libnvidia-ml.so.1 (built once, cached), or None."""
    build_py = repo / "tests" / "nvml_standin" / "build.py"
    if not build_py.is_file():
        return None
    spec = importlib.util.spec_from_file_location("slurm_gpu_lab_nvml_standin_build", build_py)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        if module.compiler() is None:
            return None
        return str(module.build())
    except Exception:  # noqa: BLE001 - no stand-in: the hooks see no driver, which the lab must survive too
        return None


def install(lab_dir: str, policy: str | None, repo: Path, say: Callable[[str], object] = print) -> None:
    """Install the hooks into ``$LAB_DIR/node-hooks`` (idempotent; atomic per file)."""
    from slurm_gpu.node.install import install as admin_install

    pre = prefix(lab_dir)
    run = os.path.join(pre, "run", "${SLURMD_NODENAME:-unknown}")
    nvml = nvml_dir(lab_dir)
    os.makedirs(nvml, mode=0o755, exist_ok=True)
    os.chmod(nvml, 0o755)
    kmsg = os.path.join(nvml, "kmsg")
    if not os.path.exists(kmsg):
        Path(kmsg).write_text("")
    settings = {"log": os.path.join(pre, "log", "node-hooks.log"),
                "accounting_file": os.path.join(pre, "gpu-jobs.jsonl"),
                "kmsg": kmsg, "kill_grace_s": "2", "nvml_timeout_s": "30", "drain_timeout_s": "15"}
    mps_control = repo / "tests" / "nvml_standin" / "bin" / "nvidia-cuda-mps-control"
    if mps_control.is_file():
        settings["mps_control"] = str(mps_control)
    env = {"SLURM_GPU_HOOKS_AGENT": f"{run}/agent.sock", "SLURM_GPU_HOOKS_STATE_DIR": f"{run}/jobs",
           "SLURM_GPU_HOOKS_TASK_DIR": f"{run}/task",
           "SLURM_GPU_HOOKS_JOBMAP_DIR": f"{run}/dcgm-job-map", "SLURM_GPU_HOOKS_MPS_DIR": f"{run}/mps",
           "SLURM_GPU_HOOKS_TEXTFILE_DIR": f"{run}/textfile", "SLURM_GPU_NVML_STANDIN_DIR": nvml}
    # the EpilogSlurmctld hook: slurmctld gives it no SLURM_CONF (measured: only SLURM_JOB_* and PWD)
    env["SLURM_CONF"] = os.path.join(lab_dir, "etc", "slurm.conf")
    env["SLURM_GPU_EPILOG_CTLD_LOG"] = ctld_log(lab_dir)
    # the hooks' driver is <nvml>/<node>.state (or none); never the state a detecting slurmd was started over
    # (lab/control.py _prepare_nvml: a whole-GPU node's slurmd reads a copy of its own)
    env["SLURM_GPU_NVML_STANDIN"] = ""
    log_dir = os.path.dirname(ctld_log(lab_dir))
    os.makedirs(log_dir, mode=0o755, exist_ok=True)  # in root's own node-hooks/log
    shutil.chown(log_dir, "slurm", "slurm")
    lib = standin_lib_dir(repo)
    if lib:
        env["LD_LIBRARY_PATH"] = lib
    else:
        say("node hooks: no stand-in libnvidia-ml.so.1 (no C compiler?): the hooks see no NVIDIA driver")
    admin_install(pre, policy, settings=settings, env=env)


AGENT_COMM = "slurm-gpu-hook-"  # /proc/PID/comm of slurm-gpu-hook-agent (15 characters)


def agent_env(lab_dir: str, node: str) -> dict[str, str]:
    """The environment a node's shims give the hooks (hooks.env, ``${SLURMD_NODENAME...}`` expanded)."""
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "SLURMD_NODENAME": node}
    try:
        text = Path(prefix(lab_dir), "hooks.env").read_text(encoding="utf-8")
    except OSError:
        return env
    for line in text.splitlines():
        key, eq, value = line.partition("=")
        if eq and key.isidentifier():
            env[key] = value.strip('"').replace("${SLURMD_NODENAME:-unknown}", node)
    return env


def start_agents(lab_dir: str, nodes: list[str], pid_dir: str, bin_dir: str,
                 say: Callable[[str], object] = print) -> None:
    """One ``slurm-gpu-hook-agent`` per emulated node, as an admin's systemd unit would run it on each node
    (started where not running; the hooks run without it whenever it is not there)."""
    from slurm_gpu.lab import procs

    exe = os.path.join(bin_dir, "slurm-gpu-hook-agent")
    if not os.access(exe, os.X_OK):
        say(f"node hooks: no {exe}; the hooks run without the agent")
        return
    for node in nodes:
        pidfile = os.path.join(pid_dir, f"hook-agent.{node}.pid")
        if procs.pidfile_process(pidfile, AGENT_COMM) is not None:
            continue
        env = agent_env(lab_dir, node)
        sock = env.get("SLURM_GPU_HOOKS_AGENT", "")
        os.makedirs(os.path.dirname(sock), mode=0o755, exist_ok=True)
        log = os.path.join(prefix(lab_dir), "log", f"hook-agent.{node}.log")  # root's directory, not the lab's 1777 one
        os.makedirs(os.path.dirname(log), mode=0o755, exist_ok=True)
        procs.start_detached([exe, "--socket", sock], log, pidfile, env=env)
    from slurm_gpu.lab.daemons import poll

    for node in nodes:  # listening before the first job comes
        sock = agent_env(lab_dir, node).get("SLURM_GPU_HOOKS_AGENT", "")
        if not any(os.path.exists(sock) for _ in poll(10)):
            say(f"node hooks: the agent of {node} does not listen on {sock}; its hooks run without it")


def stop_agents(pid_dir: str, say: Callable[[str], object] = print) -> None:
    from slurm_gpu.lab import procs

    if os.path.isdir(pid_dir):
        for f in sorted(os.listdir(pid_dir)):
            if f.startswith("hook-agent."):
                procs.stop_pidfile(os.path.join(pid_dir, f), AGENT_COMM, say)


__all__ = ["ENV_SWITCH", "enabled_by_env", "prefix", "nvml_dir", "wire", "install", "start_agents", "stop_agents"]
