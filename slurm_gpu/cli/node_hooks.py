# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu-prolog``, ``slurm-gpu-epilog``, ``slurm-gpu-task-prolog``: slurmd's Prolog=, Epilog= and
TaskProlog= entry points (docs/hooks.md). Started for every job, so without click; all the work is in
slurm_gpu/app/node_hooks.py. Arguments: ``-h``/``--help`` only (slurmd passes none).

Exit status: 0, except 3: a Prolog that found a real GPU health failure (the node is drained and the
job requeued), an Epilog whose drain after a real failure did not work (Slurm then drains the node),
a TaskProlog whose job's GPU set-up failed for reasons of the job's own. The shims in prolog_epilog/
pass 3 on as 1 and turn anything else (a broken interpreter: 1) into 0.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a hook starts for every job)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import FrameType

HARD_LIMIT_S = 300  # backstop; NVML work is bounded by nvml_timeout_s, scontrol by drain_timeout_s
USAGE = """usage: {prog}

  slurmd's {what} for GPU jobs (docs/hooks.md). Settings: /etc/slurm-gpu/hooks.conf (or
  $SLURM_GPU_HOOKS_CONF), each key overridable as $SLURM_GPU_HOOKS_<KEY>.
  Exit 0 unless a real GPU health failure (Prolog: 3; Epilog: 3 only when its drain failed)."""


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    try:
        sys.stderr.write(f"slurm-gpu node hook: gave up after {HARD_LIMIT_S} s; nothing drained\n")
    finally:
        os._exit(0)


def _finish(rc: int) -> int:
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


def _main(phase: str, what: str, argv: Sequence[str] | None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] in ("-h", "--help"):
        print(USAGE.format(prog=f"slurm-gpu-{phase.replace('_', '-')}", what=what))
        return 0
    rc = 0
    # the backstop alarm only where there is GPU work (signal imports enum: ~2 ms of every CPU-only job)
    armed = phase != "task_prolog" and bool(os.environ.get("SLURM_JOB_GPUS") or os.environ.get("CUDA_VISIBLE_DEVICES"))
    try:
        if armed:
            import signal

            signal.signal(signal.SIGALRM, _on_alarm)
            signal.alarm(HARD_LIMIT_S)
        from slurm_gpu.app import node_hooks

        if phase == "task_prolog":
            rc = node_hooks.run_task_prolog(os.environ, sys.stdout)
        else:
            rc = node_hooks.run_hook(phase, os.environ)
    except BaseException as exc:  # noqa: BLE001 - our own fault never fails a node or a job
        try:
            sys.stderr.write(f"slurm-gpu {phase}: internal error: {type(exc).__name__}: {str(exc)[:300]}\n")
        except (OSError, ValueError):
            pass
        rc = 0
    finally:
        if armed:
            import signal

            signal.alarm(0)
    return _finish(rc)


def prolog_main(argv: Sequence[str] | None = None) -> int:
    return _main("prolog", "Prolog", argv)


def epilog_main(argv: Sequence[str] | None = None) -> int:
    return _main("epilog", "Epilog", argv)


def task_prolog_main(argv: Sequence[str] | None = None) -> int:
    return _main("task_prolog", "TaskProlog", argv)
