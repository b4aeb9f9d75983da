# SPDX-License-Identifier: Apache-2.0
"""Without Slurm: ``LocalExecutor`` (subprocesses on this machine) and ``DebugExecutor`` (in process).

LocalExecutor runs the same worker (slurm_gpu/api/worker.py) with the same environment contract as a
Slurm job: RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT per task (``tasks_per_node``), a
CUDA_VISIBLE_DEVICES of its own per task (``visible_gpus``, one per task), and with ``checkpoint=True``
the checkpoint protocol's GPUSUB_CKPT_DIR, GPUSUB_RESTART_COUNT and stop signal: ``job.preempt()`` (or
the ``timeout_min`` limit) sends the stop signal to every task; a task that checkpointed is restarted
from its resubmission while restarts < ``max_requeues``; a job stopped with no restart left ends
PREEMPTED (or TIMEOUT), as Slurm would report it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from slurm_gpu.api.executor import Job, check_parameters
from slurm_gpu.api.folder import Folder
from slurm_gpu.api.states import JobStatus
from slurm_gpu.api.worker import run as run_worker
from slurm_gpu.api.worker import task_record

LOCAL_PARAMETERS = ("tasks_per_node", "timeout_min", "checkpoint", "max_requeues", "ckpt_signal", "ckpt_grace",
                    "visible_gpus", "array_parallelism", "name")
DEFAULT_MAX_REQUEUES = 3
DEFAULT_GRACE_S = 60.0


class _LocalRun:
    """One local job: its task processes, restarts and state."""

    def __init__(self, ex: LocalExecutor, job: Job, params: Mapping[str, Any]) -> None:
        self.ex, self.job, self.params = ex, job, dict(params)
        self.state = "PENDING"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.restarts = 0
        self.stop_why: str | None = None
        self.exit_code = ""
        self.lock = threading.Lock()
        self.signal = signal.Signals["SIG" + str(self.params.get("ckpt_signal") or "USR2").upper().removeprefix("SIG")]

    def env_for(self, rank: int, world: int, ckpt_dir: str | None) -> dict[str, str]:
        env = dict(self.ex.env)
        env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(10000 + int(self.job.key[:8], 16) % 50000), SLURM_GPU_API_LOCAL="1")
        gpus = list(self.params.get("visible_gpus") or [])
        if gpus:
            env["CUDA_VISIBLE_DEVICES"] = str(gpus[rank % len(gpus)])
        if ckpt_dir is not None:
            env.update(GPUSUB_CKPT_DIR=ckpt_dir, GPUSUB_RESTART_COUNT=str(self.restarts),
                       GPUSUB_CKPT_SIGNAL=self.signal.name[3:])
        return env

    def start(self) -> None:
        world = int(self.params.get("tasks_per_node") or 1)
        ckpt_dir = None
        if self.params.get("checkpoint"):
            ckpt_dir = self.ex.folder.file(f"{self.job.key}.ckpt")
        from slurm_gpu.adapters.fs import open_append, open_dir

        if ckpt_dir is not None:  # the user's own, in the private folder: no symlink followed
            os.close(open_dir(ckpt_dir, create=True, mode=0o700, uid=os.geteuid(), follow_last=False))

        out = open_append(self.ex.folder.file(self.job.out_name), 0o600)
        err = open_append(self.ex.folder.file(self.job.err_name), 0o600)
        try:
            self.procs = [subprocess.Popen(
                [self.ex.python, "-m", "slurm_gpu.api", self.ex.folder.path, self.job.key],
                env=self.env_for(rank, world, ckpt_dir), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                start_new_session=True) for rank in range(world)]
        finally:
            os.close(out)
            os.close(err)
        self.state = "RUNNING"

    def stop(self, why: str) -> None:
        with self.lock:
            if self.state != "RUNNING" or self.stop_why is not None:
                return
            self.stop_why = why
            for p in self.procs:  # the task's whole process group, as the rendered script does
                if p.poll() is None:
                    try:
                        os.killpg(p.pid, self.signal)
                    except ProcessLookupError:
                        pass

    def run(self) -> None:
        """The job's life: runs, stops, restarts, final state."""
        limit = self.params.get("timeout_min")
        grace = float(self.params.get("ckpt_grace") or DEFAULT_GRACE_S)
        max_requeues = int(self.params.get("max_requeues", DEFAULT_MAX_REQUEUES))
        while True:
            self.stop_why = None
            self.start()
            started = time.monotonic()
            stopped_at: float | None = None
            while any(p.poll() is None for p in self.procs):
                now = time.monotonic()
                if limit is not None and self.stop_why is None and now - started > float(limit) * 60:
                    self.stop("time-limit")
                if self.stop_why is not None and stopped_at is None:
                    stopped_at = now
                if stopped_at is not None and now - stopped_at > grace:
                    for p in self.procs:
                        p.kill()
                time.sleep(0.05)
            codes = [p.returncode for p in self.procs]
            checkpointed = self.stop_why is not None and self.ex.folder.exists(f"{self.job.key}.stopped")
            if checkpointed and self.stop_why != "cancel" and self.restarts < max_requeues:
                self.ex.folder.remove([f"{self.job.key}.stopped"])
                self.restarts += 1
                continue
            worst = max(codes, key=abs)
            self.exit_code = f"{worst}:0" if worst >= 0 else f"0:{-worst}"
            if self.stop_why == "cancel":
                self.state = "CANCELLED"
            elif self.stop_why == "preemption":
                self.state = "PREEMPTED"
            elif self.stop_why == "time-limit":
                self.state = "TIMEOUT"
            else:
                self.state = "COMPLETED" if all(c == 0 for c in codes) else "FAILED"
            return


class LocalExecutor:
    """Runs jobs as subprocesses of this process (see the module doc); the same Job handles."""

    def __init__(self, folder: str | os.PathLike[str], *, env: Mapping[str, str] | None = None,
                 python: str | None = None, max_parallel: int | None = None) -> None:
        self.folder = Folder(folder)
        self.env = dict(os.environ if env is None else env)
        self.python = python or sys.executable
        self.parameters: dict[str, Any] = {}
        self.runs: dict[str, _LocalRun] = {}
        self._slots = threading.Semaphore(max_parallel or max(1, os.cpu_count() or 1))

    def update_parameters(self, **kwargs: Any) -> None:
        local = {k: v for k, v in kwargs.items() if k in LOCAL_PARAMETERS}
        rest = {k: v for k, v in kwargs.items() if k not in LOCAL_PARAMETERS}
        checked = check_parameters(rest)  # the Slurm executor's names are accepted (and mean nothing here)
        self.parameters.update(checked)
        self.parameters.update(local)

    def _write_task(self, key: str, task: tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]) -> None:
        self.folder.write_obj(f"{key}.task.pkl", task_record(task))

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Job:
        key = uuid.uuid4().hex[:16]
        self._write_task(key, (fn, tuple(args), dict(kwargs)))
        job = Job(self, key, f"local-{key[:8]}", f"{key}.out", f"{key}.err")
        run = _LocalRun(self, job, self.parameters)
        self.runs[job.job_id or ""] = run

        def life() -> None:
            with self._slots:
                run.run()

        threading.Thread(target=life, daemon=True, name=f"slurm_gpu.api {job.job_id}").start()
        return job

    def map_array(self, fn: Callable[..., Any], *iterables: Iterable[Any]) -> list[Job]:
        items = list(zip(*iterables, strict=True)) if len(iterables) > 1 else [(x,) for x in iterables[0]]
        return [self.submit(fn, *a) for a in items]

    @contextmanager
    def batch(self) -> Iterator[None]:
        """As Executor.batch (here each submission starts at once)."""
        yield

    @contextmanager
    def allocation(self, **parameters: Any) -> Iterator[LocalExecutor]:
        """As Executor.allocation: here each step is a local job with these parameters."""
        saved = dict(self.parameters)
        self.update_parameters(**parameters)
        try:
            yield self
        finally:
            self.parameters = saved

    def preempt(self, job: Job) -> None:
        """Send the stop signal as a preemption would (the job checkpoints and restarts)."""
        self.runs[job.job_id or ""].stop("preemption")

    def _status(self, job: Job) -> JobStatus | None:
        run = self.runs.get(job.job_id or "")
        if run is None:
            return None
        return JobStatus(job.job_id or "", run.state, restarts=run.restarts, exit_code=run.exit_code, source="local")

    def _refresh(self) -> None:
        return None

    def _due_in(self) -> float:
        return 0.05

    def _cancel(self, job: Job) -> None:
        self.runs[job.job_id or ""].stop("cancel")


class DebugExecutor(LocalExecutor):
    """Runs each job in this process, at submit time, through the same worker (pdb and prints work)."""

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Job:
        key = uuid.uuid4().hex[:16]
        self._write_task(key, (fn, tuple(args), dict(kwargs)))
        job = Job(self, key, f"debug-{key[:8]}", "", "")
        env = dict(self.env)
        env.setdefault("RANK", "0")
        code = run_worker(self.folder.path, key, env)
        run = _LocalRun(self, job, self.parameters)
        run.state = "COMPLETED" if code == 0 else "FAILED"
        self.runs[job.job_id or ""] = run
        return job


__all__ = ["LocalExecutor", "DebugExecutor"]
