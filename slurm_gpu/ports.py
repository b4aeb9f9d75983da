# SPDX-License-Identifier: Apache-2.0
"""The ports: what the toolkit needs from the outside, named by role (typing Protocols).

The core and the app code take these types; :mod:`slurm_gpu.adapters.slurm` implements them with the
Slurm client commands (``SbatchCli`` satisfies :class:`SlurmClient`; tests/adapters states it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from slurm_gpu.slurm.records import JobState, NodeAlloc, SubmitResult, TestOnlyResult
from slurm_gpu.slurm.release import Version


@runtime_checkable
class JobWatch(Protocol):
    """Reads one job's state (``gpusub --wait`` follows a job through it)."""

    def job_state(self, job_id: int) -> JobState | None: ...


@runtime_checkable
class SlurmClient(JobWatch, Protocol):
    """What gpusub needs from Slurm: the client's version, submission, Slurm's own dry run, job state."""

    def version(self) -> Version: ...

    def preflight(self) -> None: ...

    def help_text(self) -> str: ...

    def submit(self, options: Sequence[str], script_path: str, script_args: Sequence[str] = ()) -> SubmitResult: ...

    def test_only(self, options: Sequence[str], script_path: str,
                  script_args: Sequence[str] = ()) -> TestOnlyResult: ...

    def job_detail(self, job_id: int) -> tuple[dict[str, str], list[NodeAlloc]]: ...


@runtime_checkable
class ClusterSource(Protocol):
    """What ``slurm-gpu cluster`` reads: Slurm's node and partition records as text (``scontrol show node
    -d -o``, ``show partition -o``), the jobs as squeue's JSON (``squeue --json -t all``: docs/records.md)
    and gres.conf if readable."""

    def nodes_text(self) -> str: ...

    def jobs_json(self) -> str: ...

    def partitions_text(self) -> str: ...

    def gres_conf_text(self) -> str | None: ...

    def topology_text(self) -> str: ...  # ``scontrol show topology``; "" without a topology plugin


@runtime_checkable
class CommandRunner(Protocol):
    """Runs one Slurm client command under a timeout: (exit status, stdout, stderr)."""

    def __call__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
                 timeout_s: float | None = None, cwd: str | None = None) -> tuple[int, str, str]: ...


__all__ = ["JobWatch", "SlurmClient", "ClusterSource", "CommandRunner"]
