# SPDX-License-Identifier: Apache-2.0
"""One node-hook run in this process: the entry points' (slurm_gpu/cli/node_hooks.py) and the hook agent's
child's (node/agent.py). A backstop alarm where there is GPU work; any fault of ours is status 0."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a hook starts for every job)
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any

HARD_LIMIT_S = 300  # backstop; NVML work is bounded by nvml_timeout_s, scontrol by drain_timeout_s
SIGALRM = 14  # Linux; _signals() checks


def _signals() -> Any:
    """CPython's ``_signal`` (what ``signal`` wraps, without ``signal``'s import of enum: ~3 ms of every
    hook run); ``signal`` where it is missing."""
    try:
        import _signal as mod  # type: ignore[import-not-found]
    except ImportError:
        import signal as mod
    assert mod.SIGALRM == SIGALRM
    return mod


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    try:
        sys.stderr.write(f"slurm-gpu node hook: gave up after {HARD_LIMIT_S} s; nothing drained\n")
    finally:
        os._exit(0)


def finish(rc: int) -> int:
    """Leave at once when a helper thread is stuck in the driver (it cannot be joined)."""
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(rc)
    return rc


def our_fault(prefix: str, exc: BaseException) -> int:
    """A fault of ours: one line on stderr (never raising), and the status that fails nothing (0)."""
    try:
        sys.stderr.write(f"{prefix}: {type(exc).__name__}: {str(exc)[:300]}\n")
    except (OSError, ValueError):
        pass
    return 0


def run_phase(phase: str) -> int:
    """One hook run in this process (the entry point's, or the hook agent's child): the exit status."""
    rc = 0
    # the backstop alarm only where there is GPU work (the shims start no Python for a job without GPUs)
    armed = phase != "task_prolog" and bool(os.environ.get("SLURM_JOB_GPUS") or os.environ.get("CUDA_VISIBLE_DEVICES"))
    try:
        if armed:
            _signals().signal(SIGALRM, _on_alarm)
            _signals().alarm(HARD_LIMIT_S)
        from slurm_gpu.node import runner

        if phase == "task_prolog":
            rc = runner.run_task_prolog(os.environ, sys.stdout)
        else:
            rc = runner.run_hook(phase, os.environ)
    except BaseException as exc:  # noqa: BLE001 - our own fault never fails a node or a job
        rc = our_fault(f"slurm-gpu {phase}: internal error", exc)
    finally:
        if armed:
            _signals().alarm(0)
    return rc
