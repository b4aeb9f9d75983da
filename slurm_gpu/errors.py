# SPDX-License-Identifier: Apache-2.0
"""The error types of slurm-gpu. Core code raises these; only the CLI turns them into exit codes."""

from __future__ import annotations


class SlurmGpuError(Exception):
    """Base class: a problem we can explain to the user in one line. ``exit_code`` is the documented
    exit status of the command that meets it (README "Exit codes"): 1 unless a subclass says 2."""

    exit_code = 1


class UsageError(SlurmGpuError):
    """A bad option, value or input file (exit code 2); the message names the accepted forms."""

    exit_code = 2


class Rejected(SlurmGpuError):
    """The site policy refused the job (exit code 1)."""


def exit_code_for(exc: BaseException) -> int:
    """The exit status for an error that reached the command line: by type, never by name."""
    return exc.exit_code if isinstance(exc, SlurmGpuError) else 1


class PolicyError(SlurmGpuError):
    """A policy file is invalid. ``problems`` holds every violation found (they are all reported at once)."""

    def __init__(self, problems: list[str] | str):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


class TopologyError(SlurmGpuError):
    """A topology capture cannot be parsed; the message names the line and the problem."""


class SubmitError(SlurmGpuError):
    """Slurm refused a submission or could not be reached."""


class SlurmUnreachable(SubmitError):
    """No slurmctld answered within the timeout."""


class SlurmRefused(SubmitError):
    """Slurm answered and refused: the client (sbatch) exited non-zero with Slurm's reason, so nothing was
    created (not an unreachable controller, nor an answer that could not be read)."""
