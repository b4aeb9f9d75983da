# SPDX-License-Identifier: Apache-2.0
"""``Executor``: functions, commands and sweeps to Slurm through gpusub's own prepare step.

Every submission is a gpusub command line (``job.gpusub_argv``: the sbatch options, gpusub's own and
``--wrap`` running :mod:`slurm_gpu.api.worker`) that goes through ``slurm_gpu.submit.gpusub.prepare``
(policy classification, typed GPUs, binding), ``checkpoint_settings`` and ``render_prepared`` (the batch
script), then the one Slurm adapter (``SbatchCli.submit``): the job is the one ``gpusub`` would submit
for the same line, byte for byte (tests/api/test_same_job.py). Job state comes from the process's shared
poller (poller.py).
"""

from __future__ import annotations

import os
import shlex
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import IO, Any

from slurm_gpu.api.arrays import DEFAULT_MAX_ARRAY_SIZE, plan_arrays, read_max_array_size, read_max_submit
from slurm_gpu.api.command import Command, RequeueCommand
from slurm_gpu.api.folder import Folder
from slurm_gpu.api.poller import Poller, shared_poller
from slurm_gpu.api.states import JobStatus
from slurm_gpu.api.task import Resubmission
from slurm_gpu.api.worker import task_record
from slurm_gpu.errors import Rejected, SubmitError, UsageError

DEFAULT_SUBMIT_RATE = 5.0  # sbatch calls per second at most (submitit has no bound: its issue #1659)


class FailedJobError(RuntimeError):
    """The job raised (``remote_traceback``: its traceback, ``original``: the exception when it unpickled),
    or ended without a result (``outcome``: Slurm's, e.g. ``timeout``, ``preempted``, ``oom``)."""

    def __init__(self, text: str, *, outcome: str = "failed", remote_traceback: str = "",
                 original: BaseException | None = None) -> None:
        super().__init__(text)
        self.outcome = outcome
        self.remote_traceback = remote_traceback
        self.original = original


# ---- parameters: one table -------------------------------------------------------------------

def _opt(flag: str) -> Callable[[Any], list[str]]:
    return lambda v: [f"{flag}={v}"]


def _flag(flag: str) -> Callable[[Any], list[str]]:
    return lambda v: [flag] if v else []


# name -> its gpusub/sbatch options (submitit's names, and sbatch's long names with _ for -)
PARAMETERS: dict[str, Callable[[Any], list[str]]] = {
    "name": _opt("--job-name"), "timeout_min": lambda v: [f"--time={int(v)}"], "time": _opt("--time"),
    "nodes": _opt("--nodes"), "tasks_per_node": _opt("--ntasks-per-node"), "ntasks": _opt("--ntasks"),
    "cpus_per_task": _opt("--cpus-per-task"), "cpus_per_gpu": _opt("--cpus-per-gpu"),
    "mem_gb": lambda v: [f"--mem={int(v)}G"], "mem": _opt("--mem"), "mem_per_gpu": _opt("--mem-per-gpu"),
    "partition": _opt("--partition"), "qos": _opt("--qos"), "account": _opt("--account"),
    "constraint": _opt("--constraint"), "exclude": _opt("--exclude"), "nodelist": _opt("--nodelist"),
    "gres": _opt("--gres"), "exclusive": _flag("--exclusive"), "signal": _opt("--signal"), "comment": _opt("--comment"),
    "dependency": _opt("--dependency"), "reservation": _opt("--reservation"), "chdir": _opt("--chdir"),
    # gpusub's own
    "gpu_fraction": _opt("--gpu-fraction"), "mig": _opt("--mig"), "mps": _opt("--mps"), "cls": _opt("--class"),
    "checkpoint": _flag("--checkpoint"), "ckpt_signal": _opt("--ckpt-signal"), "ckpt_grace": _opt("--ckpt-grace"),
    "launch": _opt("--launch"), "policy": _opt("--policy"), "gpu_isolation": _opt("--gpu-isolation"),
    "model_params": _opt("--model-params"),
}
GPU_PARAMETERS = ("gpus", "gpus_per_node", "gpu_type")  # joined: --gpus=TYPE:N / --gpus-per-node=TYPE:N
EXECUTOR_PARAMETERS = ("array_parallelism", "max_array_size", "max_submit", "submit_rate", "additional_parameters")
ALIASES = {"slurm_array_parallelism": "array_parallelism", "slurm_additional_parameters": "additional_parameters",
           "gpus_per_task": "gpus"}


def parameter_options(params: Mapping[str, Any]) -> list[str]:
    """The gpusub command line of a parameter set, in the table's order."""
    out: list[str] = []
    for name, to_options in PARAMETERS.items():
        if params.get(name) is not None:
            out += to_options(params[name])
    gpu_type = params.get("gpu_type")
    for name, flag in (("gpus", "--gpus"), ("gpus_per_node", "--gpus-per-node")):
        n = params.get(name)
        if n:
            out.append(f"{flag}={gpu_type}:{int(n)}" if gpu_type else f"{flag}={int(n)}")
    for key, value in (params.get("additional_parameters") or {}).items():
        flag = "--" + str(key).replace("_", "-")
        out += ([flag] if value is True else [] if value in (False, None) else [f"{flag}={value}"])
    return out


def check_parameters(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for raw, value in kwargs.items():
        name = ALIASES.get(raw, raw)
        if name.startswith("slurm_") and name[6:] in PARAMETERS:
            name = name[6:]
        if name not in PARAMETERS and name not in GPU_PARAMETERS and name not in EXECUTOR_PARAMETERS:
            raise UsageError(f"update_parameters: unknown parameter {raw!r}; known: "
                             f"{', '.join([*PARAMETERS, *GPU_PARAMETERS, *EXECUTOR_PARAMETERS])} "
                             "(any other sbatch option: additional_parameters={'option': value})")
        out[name] = value
    return out


# ---- the job handle ---------------------------------------------------------------------------

class Job:
    """A submitted task (a job or one array task). ``job_id``: ``123`` or ``123_4``."""

    def __init__(self, owner: Any, key: str, job_id: str | None = None, out_name: str = "", err_name: str = "") -> None:
        self._owner = owner
        self.key = key
        self.job_id = job_id
        self.out_name = out_name
        self.err_name = err_name
        self.gpusub_argv: list[str] = []
        self.script: str = ""
        self._result: tuple[Any, ...] | None = None

    def __repr__(self) -> str:
        return f"Job({self.job_id or 'not submitted'}, {self.state})"

    @property
    def folder(self) -> Folder:
        folder: Folder = self._owner.folder
        return folder

    def status(self) -> JobStatus | None:
        if self.job_id is None:
            return None
        result: JobStatus | None = self._owner._status(self)
        return result

    @property
    def state(self) -> str:
        """Slurm's state (PENDING, RUNNING, COMPLETED, TIMEOUT, PREEMPTED, OUT_OF_MEMORY...), UNKNOWN before
        the first poll has seen the job."""
        st = self.status()
        return st.state if st is not None else ("UNKNOWN" if self.job_id else "NOT_SUBMITTED")

    @property
    def outcome(self) -> str | None:
        st = self.status()
        return st.outcome if st is not None else None

    @property
    def restarts(self) -> int:
        st = self.status()
        return st.restarts if st is not None else 0

    def done(self) -> bool:
        st = self.status()
        return st is not None and st.finished

    def wait(self, timeout_s: float | None = None) -> None:
        wait_all([self], progress=False, timeout_s=timeout_s)

    def _load(self) -> tuple[Any, ...] | None:
        if self._result is None:
            self._result = self.folder.load(f"{self.key}.result.pkl")
        return self._result

    def exception(self) -> BaseException | None:
        """None when the job returned; else a FailedJobError (its traceback in ``remote_traceback``)."""
        self.wait()
        res = self._load()
        if res is not None and res[0] == "ok":
            return None
        st = self.status()
        if res is None:
            outcome = (st.outcome if st is not None else None) or "unknown"
            if outcome == "completed" and st is not None and st.preempted_at:
                outcome = "preempted"  # stopped at a checkpoint after a preemption, requeues exhausted
            why = f" ({st.reason})" if st is not None and st.reason else ""
            tail = (self.stderr() or "")[-2000:]
            return FailedJobError(f"job {self.job_id} ended {st.state if st else 'UNKNOWN'}{why} without a result"
                                  + (f"; its stderr ends:\n{tail}" if tail else ""), outcome=outcome)
        _, type_name, message, tb, pickled = res
        original = None
        if pickled is not None:
            import pickle

            try:
                original = pickle.loads(pickled)  # noqa: S301 (a trusted result file)
            except Exception:
                original = None
        return FailedJobError(f"job {self.job_id} raised {type_name}: {message}\n{tb}", remote_traceback=tb,
                              original=original)

    def result(self) -> Any:
        """The task's return value; raises FailedJobError when it raised or ended without one."""
        exc = self.exception()
        if exc is not None:
            raise exc
        res = self._load()
        assert res is not None
        return res[1]

    def cancel(self) -> None:
        self._owner._cancel(self)

    def stdout(self) -> str | None:
        return self.folder.text(self.out_name) if self.out_name else None

    def stderr(self) -> str | None:
        return self.folder.text(self.err_name) if self.err_name else None


def wait_all(jobs: Sequence[Job], progress: bool = True, out: IO[str] | None = None,
             timeout_s: float | None = None) -> None:
    """Wait until every job has ended, polling each owner once per its interval (one squeue call per
    interval for all of an executor's jobs); ``progress``: a line ``N/M done`` (rewritten in place on a
    terminal)."""
    stream = out if out is not None else sys.stderr
    tty = bool(getattr(stream, "isatty", lambda: False)())
    start = time.monotonic()
    last = ""
    owners = {id(j._owner): j._owner for j in jobs}
    while True:
        for owner in owners.values():
            owner._refresh()
        states = [j.status() for j in jobs]
        finished = [s for s in states if s is not None and s.finished]
        if progress:
            bad = sum(1 for s in finished if s.outcome != "completed")
            line = f"slurm_gpu.api: {len(finished)}/{len(jobs)} done" + (f", {bad} not completed" if bad else "")
            if line != last:
                stream.write(("\r\x1b[K" + line) if tty else line + "\n")
                stream.flush()
                last = line
        if len(finished) == len(jobs):
            if progress and tty:
                stream.write("\n")
            return
        if timeout_s is not None and time.monotonic() - start > timeout_s:
            raise TimeoutError(f"{len(jobs) - len(finished)} of {len(jobs)} jobs not done after {timeout_s:g} s")
        time.sleep(max(0.05, min(owner._due_in() for owner in owners.values())))


# ---- the executor -----------------------------------------------------------------------------

class RateLimit:
    """At most ``rate`` calls per second (one slot each)."""

    def __init__(self, rate: float) -> None:
        self.gap = 1.0 / rate if rate > 0 else 0.0
        self.next = 0.0

    def take(self) -> None:
        now = time.monotonic()
        if now < self.next:
            time.sleep(self.next - now)
        self.next = max(now, self.next) + self.gap


Task = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class Executor:
    """Submits to Slurm. ``folder``: the private folder of tasks, results and logs (docs/python-api.md);
    ``env``: the client environment (default: ours; SLURM_CONF, GPUSUB_POLICY); ``keep``: keep task and
    result files after ``result()`` (default True; ``clean()`` removes a job's files)."""

    def __init__(self, folder: str | os.PathLike[str], *, env: Mapping[str, str] | None = None,
                 poll_interval_s: float = 1.0, max_poll_interval_s: float = 10.0, keep: bool = True,
                 poller: Poller | None = None, python: str | None = None) -> None:
        self.folder = Folder(folder)
        self.env = dict(os.environ if env is None else env)
        self.keep = keep
        self.python = python or sys.executable
        self.parameters: dict[str, Any] = {}
        self.poller = poller or shared_poller(self.env, interval_s=poll_interval_s,
                                              max_interval_s=max_poll_interval_s)
        self._rate = RateLimit(DEFAULT_SUBMIT_RATE)
        self._batch: list[tuple[Job, Task]] | None = None
        self._backend: Any = None
        self._lock = threading.Lock()
        self.sbatch_calls = 0

    # -- parameters ---------------------------------------------------------------------------
    def update_parameters(self, **kwargs: Any) -> None:
        self.parameters.update(check_parameters(kwargs))
        if "submit_rate" in self.parameters:
            self._rate = RateLimit(float(self.parameters["submit_rate"]))

    def gpusub_options(self) -> list[str]:
        return parameter_options(self.parameters)

    # -- Slurm --------------------------------------------------------------------------------
    def backend(self) -> Any:
        if self._backend is None:
            from slurm_gpu.submit.gpusub import make_backend

            self._backend = make_backend(self.env)
        return self._backend

    def _slurm_text(self, argv: list[str]) -> str | None:
        from slurm_gpu.adapters.slurm.runner import run_slurm

        proc = run_slurm(argv, env=self.env, timeout_s=30)
        return proc.stdout if proc.returncode == 0 else None

    def max_array_size(self) -> int:
        """The ``max_array_size`` parameter, else MaxArraySize from ``scontrol show config``."""
        given = self.parameters.get("max_array_size")
        if given:
            return int(given)
        text = self._slurm_text(["scontrol", "show", "config"])
        return (read_max_array_size(text) if text else None) or DEFAULT_MAX_ARRAY_SIZE

    def max_submit(self, qos: str | None) -> int | None:
        """The ``max_submit`` parameter, else the QOS's MaxSubmitJobsPerUser/MaxSubmitJobs (sacctmgr)."""
        given = self.parameters.get("max_submit")
        if given:
            return int(given)
        text = self._slurm_text(["sacctmgr", "-nP", "show", "qos", "format=Name,MaxSubmitJobsPerUser,MaxSubmitJobs"])
        return read_max_submit(text, qos or "normal") if text else None

    def _command(self, key: str, offset: int | None) -> str:
        cmd = [self.python, "-m", "slurm_gpu.api", self.folder.path, key]
        if offset is not None:
            cmd += ["--array", str(offset)]
        return "exec " + shlex.join(cmd)

    def job_argv(self, key: str, array: str | None = None, offset: int | None = None) -> list[str]:
        """The gpusub command line of one submission (the job gpusub would submit for it)."""
        stem = f"{key}.{offset or 0}_%a" if array is not None else key
        argv = [*self.gpusub_options(), f"--output={self.folder.file(stem + '.out')}",
                f"--error={self.folder.file(stem + '.err')}"]
        if array is not None:
            argv.append(f"--array={array}")
        return [*argv, f"--wrap={self._command(key, offset)}"]

    def _sbatch(self, argv: list[str]) -> tuple[str, int, str | None]:
        """gpusub's path for one command line: prepare, render, write, submit -> (script, job id, qos)."""
        from slurm_gpu.submit import gpusub

        backend = self.backend()
        prep = gpusub.prepare(argv, self.env, backend)
        if not prep.decision.accepted:
            fix = f" ({prep.decision.fix})" if prep.decision.fix else ""
            raise Rejected(f"rejected by policy: {prep.decision.message}{fix}")
        ckpt = gpusub.checkpoint_settings(prep)
        rendered = gpusub.render_prepared(prep, self.env, ckpt)
        options = gpusub.sbatch_options_of(rendered)
        path = gpusub.write_rendered(rendered.text, self.env)
        try:
            self._rate.take()
            self.sbatch_calls += 1
            result = backend.submit([o for o in options if o != "--quiet"], path, [])
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass
        return rendered.text, int(result.job_id), prep.decision.qos

    def _qos_of(self, argv: list[str]) -> str | None:
        """The QOS the policy decides for a command line (gpusub's prepare step; nothing submitted)."""
        if self.parameters.get("max_submit"):
            return None
        from slurm_gpu.submit import gpusub

        qos: str | None = gpusub.prepare(argv, self.env, self.backend()).decision.qos
        return qos

    # -- submission ---------------------------------------------------------------------------
    def _write_task(self, name: str, task: Task) -> None:
        self.folder.write_obj(f"{name}.task.pkl", task_record(task))

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Job:
        """Run ``fn(*args, **kwargs)`` (a function, a callable object, or a Command) as one job."""
        if not callable(fn):
            raise UsageError(f"submit: {fn!r} is not callable (a function, or Command([...]))")
        key = uuid.uuid4().hex[:16]
        job = Job(self, key, out_name=f"{key}.out", err_name=f"{key}.err")
        task: Task = (fn, tuple(args), dict(kwargs))
        if self._batch is not None:
            self._batch.append((job, task))
            return job
        self._write_task(key, task)
        job.gpusub_argv = self.job_argv(key)
        job.script, job_id, _ = self._sbatch(job.gpusub_argv)
        job.job_id = str(job_id)
        self.poller.add([job.job_id])
        return job

    def map_array(self, fn: Callable[..., Any], *iterables: Iterable[Any]) -> list[Job]:
        """``fn`` over zipped iterables as job arrays, results in input order: split above MaxArraySize
        and the QOS's MaxSubmitJobs (waiting for room in the queue), throttled by ``array_parallelism``."""
        items = list(zip(*iterables, strict=True)) if len(iterables) > 1 else [(x,) for x in iterables[0]]
        return self._arrays([(fn, tuple(a), {}) for a in items])

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Submissions inside are sent as job arrays on exit (one per MaxArraySize), in order."""
        if self._batch is not None:
            raise UsageError("batch(): already inside a batch")
        self._batch = []
        try:
            yield
            pending = self._batch
        finally:
            self._batch = None
        jobs = self._arrays([task for _, task in pending])
        for (placeholder, _), job in zip(pending, jobs, strict=True):
            placeholder.__dict__.update(job.__dict__)

    def _arrays(self, tasks: list[Task]) -> list[Job]:
        if not tasks:
            return []
        base = uuid.uuid4().hex[:12]
        throttle = self.parameters.get("array_parallelism")
        max_submit = self.max_submit(self._qos_of(self.job_argv(base, "0", 0)))
        chunks = plan_arrays(len(tasks), self.max_array_size(), max_submit, int(throttle) if throttle else None)
        for k, task in enumerate(tasks):
            self._write_task(f"{base}_{k}", task)
        jobs: list[Job] = []
        for chunk in chunks:
            argv = self.job_argv(base, chunk.spec, chunk.start)
            if max_submit:
                self._room_for(chunk.count, max_submit, jobs)
            script, job_id, _qos = self._sbatch(argv)
            for i in range(chunk.count):
                k = chunk.start + i
                stem = f"{base}.{chunk.start}_{i}"
                job = Job(self, f"{base}_{k}", f"{job_id}_{i}", f"{stem}.out", f"{stem}.err")
                job.gpusub_argv, job.script = argv, script
                jobs.append(job)
            self.poller.add([j.job_id for j in jobs[-chunk.count:] if j.job_id])
        return jobs

    def _room_for(self, count: int, max_submit: int, jobs: list[Job]) -> None:
        """Wait until ``count`` more tasks fit under MaxSubmitJobs (this executor's tasks still queued)."""
        while sum(1 for j in jobs if not j.done()) + count > max_submit:
            self._refresh()
            time.sleep(max(0.2, self._due_in()))

    # -- what a Job asks ----------------------------------------------------------------------
    def _status(self, job: Job) -> JobStatus | None:
        return self.poller.status(job.job_id or "")

    def _refresh(self) -> None:
        self.poller.refresh()

    def _due_in(self) -> float:
        return self.poller.due_in()

    def _cancel(self, job: Job) -> None:
        if job.job_id is None:
            return
        from slurm_gpu.adapters.slurm.runner import run_slurm

        proc = run_slurm(["scancel", job.job_id], env=self.env, timeout_s=30)
        if proc.returncode != 0:
            raise SubmitError(f"scancel {job.job_id}: {proc.stderr.strip()[:200]}")
        self.poller.refresh(force=True)

    def clean(self, job: Job) -> None:
        """Remove a job's task, result and log files from the folder."""
        self.folder.remove([f"{job.key}.task.pkl", f"{job.key}.result.pkl", f"{job.key}.stopped",
                            job.out_name, job.err_name])

    # -- several steps in one allocation ------------------------------------------------------
    @contextmanager
    def allocation(self, **parameters: Any) -> Iterator[Allocation]:
        """One job holding an allocation (this executor's parameters, updated by ``parameters``) in which
        ``alloc.submit(fn, ...)`` runs steps (``srun --jobid``); the job is cancelled on exit."""
        saved = dict(self.parameters)
        self.update_parameters(**parameters)
        key = uuid.uuid4().hex[:16]
        try:
            argv = self.job_argv(key)
            argv[-1] = "--wrap=exec sleep 1000000"
            _script, job_id, _ = self._sbatch(argv)
        finally:
            self.parameters = saved
        alloc = Allocation(self, str(job_id))
        self.poller.add([alloc.job_id])
        try:
            alloc.wait_running()
            yield alloc
        finally:
            alloc.close()


class Allocation:
    """Steps inside one allocation (``Executor.allocation``)."""

    def __init__(self, executor: Executor, job_id: str) -> None:
        self.executor = executor
        self.job_id = job_id
        self.steps: list[StepJob] = []

    def wait_running(self, timeout_s: float = 600) -> None:
        start = time.monotonic()
        while True:
            st = self.executor.poller.status(self.job_id)
            if st is not None and st.state == "RUNNING":
                return
            if st is not None and st.finished:
                raise SubmitError(f"allocation job {self.job_id} ended {st.state} before it ran")
            if time.monotonic() - start > timeout_s:
                raise TimeoutError(f"allocation job {self.job_id} not running after {timeout_s:g} s")
            time.sleep(max(0.2, self.executor.poller.due_in()))

    def submit(self, fn: Callable[..., Any], *args: Any, ntasks: int = 1, srun: Sequence[str] = (),
               **kwargs: Any) -> StepJob:
        """Run ``fn`` as one step of ``ntasks`` tasks (rank 0's value is the result)."""
        import subprocess

        ex = self.executor
        key = f"{uuid.uuid4().hex[:16]}"
        ex._write_task(key, (fn, tuple(args), dict(kwargs)))
        from slurm_gpu.adapters.fs import open_append

        out = open_append(ex.folder.file(f"{key}.out"), 0o600)
        err = open_append(ex.folder.file(f"{key}.err"), 0o600)
        argv = ["srun", f"--jobid={self.job_id}", "--overlap", f"--ntasks={ntasks}", *srun,
                ex.python, "-m", "slurm_gpu.api", ex.folder.path, key]
        proc = subprocess.Popen(argv, env=ex.env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        os.close(out)
        os.close(err)
        step = StepJob(self, key, proc)
        self.steps.append(step)
        return step

    def close(self) -> None:
        for step in self.steps:
            step.proc.wait()
        from slurm_gpu.adapters.slurm.runner import run_slurm

        run_slurm(["scancel", self.job_id], env=self.executor.env, timeout_s=30)


class StepJob(Job):
    """A step of an allocation: its state is its srun's."""

    def __init__(self, alloc: Allocation, key: str, proc: Any) -> None:
        super().__init__(_StepOwner(alloc.executor), key, f"{alloc.job_id}.step-{key[:6]}", f"{key}.out", f"{key}.err")
        self.proc = proc
        self._owner.steps[self.job_id or ""] = self


class _StepOwner:
    def __init__(self, executor: Executor) -> None:
        self.folder = executor.folder
        self.steps: dict[str, StepJob] = {}

    def _status(self, job: Job) -> JobStatus | None:
        step = self.steps[job.job_id or ""]
        rc = step.proc.poll()
        if rc is None:
            return JobStatus(job.job_id or "", "RUNNING")
        return JobStatus(job.job_id or "", "COMPLETED" if rc == 0 else "FAILED", exit_code=f"{rc}:0")

    def _refresh(self) -> None:
        return None

    def _due_in(self) -> float:
        return 0.2

    def _cancel(self, job: Job) -> None:
        self.steps[job.job_id or ""].proc.terminate()


__all__ = ["Executor", "Job", "Command", "RequeueCommand", "Resubmission", "FailedJobError", "wait_all", "Allocation",
           "parameter_options", "PARAMETERS"]
