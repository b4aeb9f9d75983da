# SPDX-License-Identifier: Apache-2.0
"""The lab's node hooks, installed the way an admin would (``slurm-gpu admin install``, docs/lab.md).

``lab up`` with node hooks on (``SLURM_GPU_LAB_NODE_HOOKS=1``) installs the shims and a hooks.conf into
``$LAB_DIR/node-hooks`` and names the shims in slurm.conf (Prolog=, Epilog=, TaskProlog=,
PrologFlags=Alloc). ``hooks.env`` (sourced by every shim before the entry point starts) puts the
stand-in ``libnvidia-ml.so.1`` (built from tests/nvml_standin, when a C compiler is there) on
``LD_LIBRARY_PATH`` and serves ``$LAB_DIR/nvml/<node>.state``: a node without a state file is a node
without an NVIDIA driver. The three emulated nodes share one host, so every per-node directory
(per-job state, TaskProlog files, job map, MPS, textfiles) is kept apart by ``$SLURMD_NODENAME``.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from slurm_gpu.lab.spec import LabHooks

ENV_SWITCH = "SLURM_GPU_LAB_NODE_HOOKS"
SUBDIR = "node-hooks"
SHIMS = {"prolog": "prolog.sh", "epilog": "epilog.sh", "task_prolog": "task_prolog.sh"}


def enabled_by_env(default: bool = False) -> bool:
    value = os.environ.get(ENV_SWITCH, "")
    return default if value == "" else value != "0"


def prefix(lab_dir: str) -> str:
    return os.path.join(lab_dir, SUBDIR)


def nvml_dir(lab_dir: str) -> str:
    """Where the tests put ``<node>.state`` for the stand-in library (no file: no driver on that node)."""
    return os.path.join(lab_dir, "nvml")


def wire(hooks: LabHooks, lab_dir: str) -> LabHooks:
    """``hooks`` with Prolog/Epilog/TaskProlog = the installed shims (paths given explicitly win)."""
    if not hooks.node_hooks:
        return hooks
    pre = prefix(lab_dir)
    return replace(hooks, prolog=hooks.prolog or os.path.join(pre, SHIMS["prolog"]),
                   epilog=hooks.epilog or os.path.join(pre, SHIMS["epilog"]),
                   task_prolog=hooks.task_prolog or os.path.join(pre, SHIMS["task_prolog"]))


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
    from slurm_gpu.app.admin import install as admin_install

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
    env = {"SLURM_GPU_HOOKS_STATE_DIR": f"{run}/jobs", "SLURM_GPU_HOOKS_TASK_DIR": f"{run}/task",
           "SLURM_GPU_HOOKS_JOBMAP_DIR": f"{run}/dcgm-job-map", "SLURM_GPU_HOOKS_MPS_DIR": f"{run}/mps",
           "SLURM_GPU_HOOKS_TEXTFILE_DIR": f"{run}/textfile", "SLURM_GPU_NVML_STANDIN_DIR": nvml}
    lib = standin_lib_dir(repo)
    if lib:
        env["LD_LIBRARY_PATH"] = lib
    else:
        say("node hooks: no stand-in libnvidia-ml.so.1 (no C compiler?): the hooks see no NVIDIA driver")
    admin_install(pre, policy, settings=settings, env=env)


__all__ = ["ENV_SWITCH", "enabled_by_env", "prefix", "nvml_dir", "wire", "install"]
