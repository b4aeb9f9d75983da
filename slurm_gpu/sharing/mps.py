# SPDX-License-Identifier: Apache-2.0
"""Per-job MPS as data: the share check, the job's directories, the daemon's and the tasks'
environment, and the control commands. Pure; :mod:`slurm_gpu.adapters.gpu_config` does the work.

Layout under a root-owned base (default ``/run/slurm-gpu/mps``, mode 0755)::

    <base>/<jobid>/            root 0755   the job's directory (mkdir: never reused, never a symlink)
    <base>/<jobid>/state.json  root 0600   compute modes to restore, written only by root, here
    <base>/<jobid>/pipe/       user 0700   CUDA_MPS_PIPE_DIRECTORY (control socket)
    <base>/<jobid>/log/        user 0700   CUDA_MPS_LOG_DIRECTORY

Root writes only in directories that root owns; the user's two directories are created by root and
handed over with fchown on a descriptor opened with O_NOFOLLOW, so a planted symlink is never followed.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING

from slurm_gpu.plain import Record, record

if TYPE_CHECKING:
    from slurm_gpu.policy.model import Isolation

DEFAULT_BASE = "/run/slurm-gpu/mps"
QUIT = "quit"
MAX_JOB_ID = 2 ** 32


class MpsError(ValueError):
    """An MPS request that cannot be served (one line)."""


@record
class MpsPlan(Record):
    job_id: int
    pct: int
    job_dir: str
    pipe_dir: str
    log_dir: str
    state_file: str


def check_share(pct: int, isolation: Isolation) -> int:
    """``pct`` if the policy allows it (``isolation.mps_min_share_pct``..``mps_max_share_pct``)."""
    lo, hi = isolation.mps_min_share_pct, isolation.mps_max_share_pct
    if isinstance(pct, bool) or not isinstance(pct, int) or not lo <= pct <= hi:
        raise MpsError(f"MPS share {pct!r}% is outside the allowed {lo}-{hi}%")
    return pct


def _paths(job_id: int, pct: int, base: str) -> MpsPlan:
    if isinstance(job_id, bool) or not isinstance(job_id, int) or not 0 < job_id < MAX_JOB_ID:
        raise MpsError(f"bad job id {job_id!r}")
    if not base.startswith("/") or posixpath.normpath(base) != base.rstrip("/") or base == "/":
        raise MpsError(f"MPS base directory {base!r} must be an absolute, normalised path")
    job_dir = posixpath.join(base, str(job_id))
    return MpsPlan(job_id, pct, job_dir, posixpath.join(job_dir, "pipe"), posixpath.join(job_dir, "log"),
                   posixpath.join(job_dir, "state.json"))


def plan(job_id: int, pct: int, isolation: Isolation, base: str = DEFAULT_BASE) -> MpsPlan:
    """The job's MPS plan, or :class:`MpsError` (bad share, bad job id, relative base)."""
    p = _paths(job_id, 0, base)
    return MpsPlan(p.job_id, check_share(pct, isolation), p.job_dir, p.pipe_dir, p.log_dir, p.state_file)


def teardown_plan(job_id: int, base: str = DEFAULT_BASE) -> MpsPlan:
    """The plan the epilog stops: the same paths, no share check (the epilog runs whatever the comment
    says now, and finds nothing to do when the prolog started no daemon)."""
    return _paths(job_id, 0, base)


def daemon_env(p: MpsPlan, gpus: tuple[str, ...], path: str) -> dict[str, str]:
    """The whole environment of ``nvidia-cuda-mps-control -d``: nothing inherited but ``path``."""
    return {"PATH": path, "CUDA_VISIBLE_DEVICES": ",".join(gpus), "CUDA_MPS_PIPE_DIRECTORY": p.pipe_dir,
            "CUDA_MPS_LOG_DIRECTORY": p.log_dir}


def task_env(p: MpsPlan) -> dict[str, str]:
    """What the TaskProlog exports to the job's tasks."""
    return {"CUDA_MPS_PIPE_DIRECTORY": p.pipe_dir, "CUDA_MPS_LOG_DIRECTORY": p.log_dir,
            "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(p.pct)}


def start_commands(p: MpsPlan) -> tuple[str, ...]:
    """Control commands sent once the daemon listens."""
    return (f"set_default_active_thread_percentage {p.pct}",)


__all__ = ["DEFAULT_BASE", "QUIT", "MpsError", "MpsPlan", "check_share", "plan", "teardown_plan", "daemon_env",
           "task_env", "start_commands"]
