# SPDX-License-Identifier: Apache-2.0
"""``Command(["prog", "arg"])``: a shell command as a task (submitit's ``CommandFunction``). Its result is
its standard output; a non-zero exit raises ``CommandFailed`` with the tail of its standard error."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence


class CommandFailed(RuntimeError):
    """The command exited non-zero (its exit status in ``returncode``)."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        super().__init__(f"{' '.join(argv)[:200]} exited with status {returncode}: {stderr[-2000:]}")
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
        proc = subprocess.run([*self.argv, *map(str, extra)], env=env, cwd=self.cwd, capture_output=True,
                              check=False, encoding="utf-8", errors="replace")
        if proc.returncode != 0:
            raise CommandFailed(self.argv, proc.returncode, proc.stderr)
        return proc.stdout

    def __repr__(self) -> str:
        return f"Command({self.argv!r})"


__all__ = ["Command", "CommandFailed"]
