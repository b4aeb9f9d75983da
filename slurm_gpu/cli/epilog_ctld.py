# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu-epilog-ctld``: the checkpoint protocol's EpilogSlurmctld entry point.

    slurm-gpu-epilog-ctld [--policy FILE] [--log FILE|-] [--dry-run] [--verbose]

slurmctld runs it (as SlurmUser) when a job ends, with the job in SLURM_JOB_* variables. It requeues a
checkpointing job that could not requeue itself (preempted under PreemptMode=CANCEL, a node failure, killed
at its time limit) when a fresh complete checkpoint exists and the restart count is below the policy's
max_requeues, and logs why not otherwise. It ALWAYS exits 0, even on bad options or a broken environment:
the job's fate must not depend on this hook's own faults. Started once per job end, so without click.
docs/checkpointing.md, "The controller-side hook".
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping, Sequence
from types import FrameType

PROG = "slurm-gpu-epilog-ctld"
USAGE = f"""usage: {PROG} [--policy FILE] [--log FILE|-] [--dry-run] [--verbose]

  EpilogSlurmctld entry point: requeue a checkpointing job that was preempted (PreemptMode=CANCEL), lost a
  node or was killed at its time limit, when a fresh complete checkpoint marker exists and its restarts are
  below the policy's max_requeues; otherwise log why not.
  --policy FILE  site policy (default: $GPUSUB_POLICY, then /etc/slurm-gpu/policy.yaml)
  --log FILE     log file, appended (default: $SLURM_GPU_EPILOG_CTLD_LOG, then /var/log/slurm-gpu/epilog-ctld.log);
                 '-': stderr only
  --dry-run      decide and log, requeue nothing
  --verbose      also log the jobs it has nothing to do with
Always exits 0."""
HARD_LIMIT_S = 90  # two scontrol calls of at most 15 s each, the policy and the directory: far below this
VALUED = ("--policy", "--log")
FLAGS = ("--dry-run", "--verbose")


def parse_args(argv: Sequence[str]) -> tuple[dict[str, str | bool], str]:
    """(options, problem); a problem is reported and the hook goes on with what it understood."""
    opts: dict[str, str | bool] = {}
    problems = []
    i = 0
    while i < len(argv):
        name, eq, value = argv[i].partition("=")
        if name in ("-h", "--help"):
            opts["help"] = True
        elif name in FLAGS and not eq:
            opts[name[2:].replace("-", "_")] = True
        elif name in VALUED:
            if not eq:
                if i + 1 >= len(argv):
                    problems.append(f"{name} needs a value")
                    break
                i += 1
                value = argv[i]
            opts[name[2:]] = value
        else:
            problems.append(f"unknown argument {argv[i][:40]!r}")
        i += 1
    return opts, "; ".join(problems)


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    try:
        sys.stderr.write(f"{PROG}: gave up after {HARD_LIMIT_S} s; the job is left alone\n")
    finally:
        os._exit(0)


def run(argv: Sequence[str], env: Mapping[str, str]) -> int:
    opts, problem = parse_args(argv)
    if opts.get("help"):
        print(USAGE)
        return 0
    from slurm_gpu.adapters.fs import Log
    from slurm_gpu.node import epilog_ctld as app

    log_path = str(opts.get("log") or env.get(app.ENV_LOG) or app.DEFAULT_LOG)
    log = Log(app.PROG, None if log_path == "-" else log_path)
    try:
        if log.problem:
            log(log.problem)
        if problem:
            log(f"{problem} ({USAGE.splitlines()[0]}); going on with the rest")
        app.handle(env, app.policy_path_from(env, str(opts["policy"]) if opts.get("policy") else None), log,
                   dry_run=bool(opts.get("dry_run")), verbose=bool(opts.get("verbose")))
    except Exception as exc:  # noqa: BLE001 - the hook never fails: anything unexpected is one log line
        log(f"internal error, the job is left alone: {type(exc).__name__}: {str(exc)[:300]}")
    finally:
        log.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        signal.signal(signal.SIGALRM, _on_alarm)
        signal.alarm(HARD_LIMIT_S)
        return run(sys.argv[1:] if argv is None else argv, os.environ)
    except BaseException:  # noqa: BLE001 - even KeyboardInterrupt or a broken stderr: exit 0
        return 0
    finally:
        signal.alarm(0)


if __name__ == "__main__":
    sys.exit(main())
