# SPDX-License-Identifier: Apache-2.0
"""The error types of slurm-gpu. Core code raises these; only the CLI turns them into exit codes."""

from __future__ import annotations


class SlurmGpuError(Exception):
    """Base class: a problem we can explain to the user in one line."""


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
