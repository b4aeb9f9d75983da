# SPDX-License-Identifier: Apache-2.0
"""The one runner every Slurm client call goes through (sbatch, srun, scontrol, squeue, sinfo, sacct,
sacctmgr, scancel): a subprocess with a timeout, stdin closed, optionally as another user.

A client hangs about 9 s when slurmctld is down and about 60 s when its slurm.conf is missing, so no
call may go without a timeout. A command that is not installed raises :class:`SubmitError`; one that
gives no answer in time raises :class:`SlurmUnreachable`; a non-zero exit is returned, not raised
(``check=True`` raises it as one line).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence

from slurm_gpu.errors import SlurmUnreachable, SubmitError
from slurm_gpu.slurm.records import one_line

DEFAULT_TIMEOUT_S = 15.0
# stderr texts that mean "no controller answered", not "Slurm said no"
UNREACHABLE_MARKERS = ("Unable to contact slurm controller", "Socket timed out", "Connection refused",
                       "Could not establish a configuration source", "Zero Bytes were transmitted")


def run_slurm(argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
              cwd: str | None = None, user: str | None = None, user_env: Mapping[str, str] | None = None,
              check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run one Slurm client command. ``user`` (not root): run it through ``runuser -u USER -- env K=V ...``
    with only ``user_env`` set on top of runuser's clean environment (e.g. SLURM_CONF, GPUSUB_POLICY)."""
    env = dict(os.environ if env is None else env)
    full = list(argv)
    if user and user != "root":
        passed = [f"{k}={v}" for k, v in (user_env or {}).items()]
        full = ["runuser", "-u", user, "--", "env", *passed, *argv]
    try:
        # bytes that are no UTF-8 (a job name, a comment: any user's text) must not end the caller
        proc = subprocess.run(full, capture_output=True, encoding="utf-8", errors="replace", timeout=timeout_s,
                              env=env, cwd=cwd, stdin=subprocess.DEVNULL, check=False)
    except FileNotFoundError:
        raise SubmitError(f"{argv[0]}: command not found; install the Slurm client (Debian: slurm-client) "
                          "or put it on PATH") from None
    except subprocess.TimeoutExpired:
        raise SlurmUnreachable(
            f"{os.path.basename(argv[0])} gave no answer within {timeout_s:g} s; is slurmctld up? "
            f"(SLURM_CONF={env.get('SLURM_CONF', '/etc/slurm/slurm.conf')}; command: {' '.join(argv)})") from None
    if check and proc.returncode != 0:
        raise failure(" ".join(argv), proc.stderr or proc.stdout, env, proc.returncode)
    return proc


def failure(what: str, stderr: str, env: Mapping[str, str] | None = None, rc: int | None = None) -> SubmitError:
    """The error for a failed client call: one line, SlurmUnreachable when no controller answered."""
    line = one_line(stderr, f"{what} failed with no message")
    conf = (env or os.environ).get("SLURM_CONF", "/etc/slurm/slurm.conf")
    if any(marker in stderr for marker in UNREACHABLE_MARKERS):
        return SlurmUnreachable(f"{what}: {line} (SLURM_CONF={conf})")
    return SubmitError(f"{what}{'' if rc is None else f' (exit {rc})'}: {line}")


__all__ = ["run_slurm", "failure", "DEFAULT_TIMEOUT_S", "UNREACHABLE_MARKERS"]
