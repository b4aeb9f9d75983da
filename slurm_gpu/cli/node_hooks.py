# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu-prolog``, ``slurm-gpu-epilog``, ``slurm-gpu-task-prolog``: slurmd's Prolog=, Epilog= and
TaskProlog= entry points (docs/hooks.md). Started for every job, so without click; all the work is in
slurm_gpu/node/ (entry.py: one run in this process). Arguments: ``-h``/``--help`` only (slurmd passes none).

Exit status: 0, except 3: a Prolog that found a real GPU health failure (the node is drained and the
job requeued), an Epilog whose drain after a real failure did not work (Slurm then drains the node),
a TaskProlog whose job's GPU set-up failed for reasons of the job's own. The shims in prolog_epilog/
pass 3 on as 1 and turn anything else (a broken interpreter: 1) into 0.
"""

from __future__ import annotations

import os
import sys

from slurm_gpu.node.entry import HARD_LIMIT_S, finish, run_phase

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a hook starts for every job)
if TYPE_CHECKING:
    from collections.abc import Sequence

USAGE = """usage: {prog}

  slurmd's {what} for GPU jobs (docs/hooks.md). Settings: /etc/slurm-gpu/hooks.conf (or
  $SLURM_GPU_HOOKS_CONF), each key overridable as $SLURM_GPU_HOOKS_<KEY>.
  Exit 0 unless a real GPU health failure (Prolog: 3; Epilog: 3 only when its drain failed)."""


def _main(phase: str, what: str, argv: Sequence[str] | None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] in ("-h", "--help"):
        print(USAGE.format(prog=f"slurm-gpu-{phase.replace('_', '-')}", what=what))
        return 0
    agent = os.environ.get("SLURM_GPU_HOOKS_AGENT", "")
    if phase != "task_prolog" and agent and os.geteuid() == 0:
        # the hook agent, when one listens: the same run in a fork of a process that has everything
        # imported (slurm_gpu/node/agent.py); otherwise, or when it did not start the run, here
        try:
            from slurm_gpu.node.agent import run_via_agent

            rc = run_via_agent(agent, phase, os.environ, HARD_LIMIT_S + 30)
        except Exception as exc:  # noqa: BLE001 - before the agent started anything: run it here
            sys.stderr.write(f"slurm-gpu {phase}: hook agent not used: {type(exc).__name__}: {str(exc)[:200]}\n")
            rc = None
        if rc is not None:
            return rc
    return finish(run_phase(phase))


def prolog_main(argv: Sequence[str] | None = None) -> int:
    return _main("prolog", "Prolog", argv)


def epilog_main(argv: Sequence[str] | None = None) -> int:
    return _main("epilog", "Epilog", argv)


def task_prolog_main(argv: Sequence[str] | None = None) -> int:
    return _main("task_prolog", "TaskProlog", argv)


def agent_main(argv: Sequence[str] | None = None) -> int:
    """``slurm-gpu-hook-agent [--socket PATH]``: the optional per-node agent (slurm_gpu/node/agent.py)."""
    import argparse

    from slurm_gpu.node import agent as hook_agent

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
