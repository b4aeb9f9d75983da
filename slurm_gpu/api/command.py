# SPDX-License-Identifier: Apache-2.0
"""``Command(["prog", "arg"])``: a shell command as a task (submitit's ``CommandFunction``). Its result is
its standard output (also copied to the job's); its standard error is the job's; a non-zero exit raises
``CommandFailed``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence


class CommandFailed(RuntimeError):
    """The command exited non-zero (its exit status in ``returncode``)."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        super().__init__(f"{' '.join(argv)[:200]} exited with status {returncode} ({stderr[-2000:]})")
        self.returncode = returncode


class Command:
    """A command line run in the job (no shell); ``env``: variables added; ``cwd``: its directory."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str] | None = None, cwd: str | None = None) -> None:
        if isinstance(argv, str) or not argv:
            raise ValueError("Command takes a list of arguments, e.g. Command(['python', 'train.py'])")
        self.argv = [str(a) for a in argv]
        self.env = dict(env or {})
        self.cwd = cwd

    def __call__(self, *extra: str) -> str:
        env = {**os.environ, **self.env}
        # stdout is the result (and goes to the job's stdout too); stderr goes straight to the job's
        proc = subprocess.run([*self.argv, *map(str, extra)], env=env, cwd=self.cwd, stdout=subprocess.PIPE,
                              check=False, encoding="utf-8", errors="replace")
        sys.stdout.write(proc.stdout)
        sys.stdout.flush()
        if proc.returncode != 0:
            raise CommandFailed(self.argv, proc.returncode, "see the job's stderr")
        return proc.stdout

    def __repr__(self) -> str:
        return f"Command({self.argv!r})"


class RequeueCommand(Command):
    """A Command requeued by the checkpoint protocol (``checkpoint=True``): on the stop signal (which the
    command itself gets too, from the rendered script) it is resubmitted as it is, so the job is
    requeued and the command runs again; it resumes from its own state (GPUSUB_RESUME_FROM, its files)."""

    def checkpoint(self, *extra: str) -> object:
        from slurm_gpu.api.task import Resubmission

        return Resubmission(self, tuple(extra), {})


__all__ = ["Command", "RequeueCommand", "CommandFailed"]
