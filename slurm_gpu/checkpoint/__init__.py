# SPDX-License-Identifier: Apache-2.0
"""The checkpoint protocol (docs/checkpointing.md): a job marks each finished checkpoint, and comes
back from the newest complete one after a preemption, a time-limit stop or a node failure.

For training loops: ``mark(path, step=N)``, ``resume_path()`` and ``should_stop()`` (from
:mod:`slurm_gpu.checkpoint.job`, the edge that reads the environment and the disk; loaded on first
use, so importing the pure parts costs nothing). The pure parts: :mod:`.contract` (the environment's
names and rank identity), :mod:`.markers` (marker validation, complete steps, pruning),
:mod:`.advise` (Young's and Daly's intervals) and :mod:`.mtti` (a partition's MTTI from sacct's text).
The shell protocol: ``gpusub-ckpt mark PATH [--step N]``. The batch script's side is
slurm_gpu/render/shell.py's CHECKPOINT (``gpusub --checkpoint``); the controller's is slurm-gpu-epilog-ctld.

May import: the ground floor (GROUND in tests/test_layers.py) (its edge, ``job``, also the adapters).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from slurm_gpu.checkpoint.job import CheckpointError, mark, resume_path, should_stop

__all__ = ["CheckpointError", "mark", "resume_path", "should_stop"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from slurm_gpu.checkpoint import job

        return getattr(job, name)
    raise AttributeError(f"module 'slurm_gpu.checkpoint' has no attribute {name!r}")
