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
    from typing import Any

HARD_LIMIT_S = 300  # backstop; NVML work is bounded by nvml_timeout_s, scontrol by drain_timeout_s
USAGE = """usage: {prog}

  slurmd's {what} for GPU jobs (docs/hooks.md). Settings: /etc/slurm-gpu/hooks.conf (or
  $SLURM_GPU_HOOKS_CONF), each key overridable as $SLURM_GPU_HOOKS_<KEY>.
  Exit 0 unless a real GPU health failure (Prolog: 3; Epilog: 3 only when its drain failed)."""


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


def run_phase(phase: str) -> int:
    """One hook run in this process (the entry point's, or the hook agent's child): the exit status."""
    rc = 0
    # the backstop alarm only where there is GPU work (the shims start no Python for a job without GPUs)
    armed = phase != "task_prolog" and bool(os.environ.get("SLURM_JOB_GPUS") or os.environ.get("CUDA_VISIBLE_DEVICES"))
    try:
        if armed:
            _signals().signal(SIGALRM, _on_alarm)
            _signals().alarm(HARD_LIMIT_S)
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
            _signals().alarm(0)
    return rc


def _main(phase: str, what: str, argv: Sequence[str] | None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] in ("-h", "--help"):
        print(USAGE.format(prog=f"slurm-gpu-{phase.replace('_', '-')}", what=what))
        return 0
    agent = os.environ.get("SLURM_GPU_HOOKS_AGENT", "")
    if phase != "task_prolog" and agent and os.geteuid() == 0:
        # the hook agent, when one listens: the same run in a fork of a process that has everything
        # imported (slurm_gpu/app/hook_agent.py); otherwise, or when it did not start the run, here
        try:
            from slurm_gpu.app.hook_agent import run_via_agent

            rc = run_via_agent(agent, phase, os.environ, HARD_LIMIT_S + 30)
        except Exception as exc:  # noqa: BLE001 - before the agent started anything: run it here
            sys.stderr.write(f"slurm-gpu {phase}: hook agent not used: {type(exc).__name__}: {str(exc)[:200]}\n")
            rc = None
        if rc is not None:
            return rc
    return _finish(run_phase(phase))


def prolog_main(argv: Sequence[str] | None = None) -> int:
    return _main("prolog", "Prolog", argv)


def epilog_main(argv: Sequence[str] | None = None) -> int:
    return _main("epilog", "Epilog", argv)


def task_prolog_main(argv: Sequence[str] | None = None) -> int:
    return _main("task_prolog", "TaskProlog", argv)


def agent_main(argv: Sequence[str] | None = None) -> int:
    """``slurm-gpu-hook-agent [--socket PATH]``: the optional per-node agent (slurm_gpu/app/hook_agent.py)."""
    import argparse

    from slurm_gpu.app import hook_agent

    ap = argparse.ArgumentParser(prog="slurm-gpu-hook-agent",
                                 description="Serve the Prolog and Epilog from one process that has their imports "
                                             "loaded (docs/hooks.md, \"The agent\"). Runs as root until SIGTERM.")
    ap.add_argument("--socket", default=os.environ.get(hook_agent.ENV_SOCKET) or hook_agent.DEFAULT_SOCKET,
                    help=f"the socket (default: ${hook_agent.ENV_SOCKET}, else {hook_agent.DEFAULT_SOCKET})")
    args = ap.parse_args(None if argv is None else list(argv))
    return hook_agent.serve(args.socket)



ENTRY_POINTS = {"prolog": prolog_main, "epilog": epilog_main, "task-prolog": task_prolog_main}


def hook_main(argv: Sequence[str]) -> int:
    """``slurm-gpu-hook prolog|epilog|task-prolog``: the launcher ``slurm-gpu admin install`` writes."""
    which = argv[0] if argv else ""
    if which not in ENTRY_POINTS:
        sys.stderr.write("usage: slurm-gpu-hook prolog|epilog|task-prolog [-h]\n")
        return 2
    return ENTRY_POINTS[which](list(argv[1:]))
