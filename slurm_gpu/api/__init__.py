# SPDX-License-Identifier: Apache-2.0
"""The Python API (docs/python-api.md): submit functions, sweeps and commands from Python, placed and
checkpointed as gpusub does. Names follow submitit's so that a submitit user switches in minutes.

Owns: ``Executor`` (Slurm, through gpusub's prepare step and the one Slurm adapter), ``LocalExecutor``
(subprocesses, the same environment contract and signals), ``DebugExecutor`` (in process), ``Job``,
``Command``, ``Resubmission``, ``wait_all``. Pure: states.py (Slurm's state/reason -> outcome),
arrays.py (splitting an iterable into arrays). Edges: folder.py (the private task/result folder),
poller.py (one squeue per interval for every handle), executor.py, local.py, worker.py (the job side).
May import the core, ``submit`` (gpusub's prepare and render) and ``adapters``.
"""

from __future__ import annotations

from slurm_gpu.api.executor import Command, Executor, FailedJobError, Job, RequeueCommand, Resubmission, wait_all
from slurm_gpu.api.local import DebugExecutor, LocalExecutor

__all__ = ["Executor", "LocalExecutor", "DebugExecutor", "Job", "Command", "RequeueCommand", "Resubmission",
           "FailedJobError", "wait_all"]
