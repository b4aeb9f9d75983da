# SPDX-License-Identifier: Apache-2.0
"""The Slurm command-line adapter: one runner (:mod:`.runner`), the client (:mod:`.cli`, ``SbatchCli``,
a :class:`slurm_gpu.ports.SlurmClient`) and the live inventory (:mod:`.inventory`)."""

from slurm_gpu.adapters.slurm.cli import SbatchCli
from slurm_gpu.adapters.slurm.runner import DEFAULT_TIMEOUT_S, failure, run_slurm, stream_slurm
from slurm_gpu.slurm.records import JobState, NodeAlloc, SubmitResult, TestOnlyResult

__all__ = ["SbatchCli", "DEFAULT_TIMEOUT_S", "run_slurm", "stream_slurm", "failure", "JobState", "NodeAlloc",
           "SubmitResult", "TestOnlyResult"]
