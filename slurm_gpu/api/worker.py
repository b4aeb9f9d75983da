# SPDX-License-Identifier: Apache-2.0
"""The job side: ``python -m slurm_gpu.api FOLDER KEY [--array OFFSET]`` loads ``KEY.task.pkl``
(an array task: ``KEY_<OFFSET + SLURM_ARRAY_TASK_ID>``), runs it and writes ``KEY.result.pkl``.

The environment contract (the same under Slurm and LocalExecutor): RANK, LOCAL_RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT are set from Slurm's task variables when absent. On the checkpoint
protocol's stop signal (GPUSUB_CKPT_SIGNAL, default USR2) a callable with a ``checkpoint(*args,
**kwargs)`` method is asked for its resubmission on every rank; rank 0 saves it as the task and every
rank marks it (slurm_gpu.checkpoint.mark), so the rendered script requeues the job (within
max_requeues); the next run resumes from it. Exit codes: the task's exception is 1 (its traceback in
the result), a bad folder or task 2, a stop after a checkpoint 0.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import traceback
from collections.abc import Mapping, MutableMapping
from types import FrameType
from typing import Any

EXIT_ERROR = 1
EXIT_SETUP = 2


def rank_env(env: Mapping[str, str]) -> dict[str, str]:
    """RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from Slurm's task variables (those already
    set win): MASTER_ADDR is the job's first node, MASTER_PORT a port from the job id (10000..59999)."""
    out: dict[str, str] = {}
    if "RANK" not in env and "SLURM_PROCID" in env and "SLURM_STEP_ID" in env:
        out["RANK"] = env["SLURM_PROCID"]
        out["LOCAL_RANK"] = env.get("SLURM_LOCALID", "0")
        out["WORLD_SIZE"] = env.get("SLURM_STEP_NUM_TASKS") or env.get("SLURM_NTASKS", "1")
    elif "RANK" not in env:
        out.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
    if "MASTER_ADDR" not in env:
        nodes = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
        if nodes:
            from slurm_gpu.hostlist import expand_hostlist

            hosts = expand_hostlist(nodes)
            out["MASTER_ADDR"] = hosts[0] if hosts else "127.0.0.1"
        else:
            out["MASTER_ADDR"] = "127.0.0.1"
    if "MASTER_PORT" not in env:
        jid = (env.get("SLURM_ARRAY_JOB_ID") or env.get("SLURM_JOB_ID") or "0").strip()
        out["MASTER_PORT"] = str(10000 + int(jid) % 50000) if jid.isascii() and jid.isdigit() else "29500"
    return out


def _result_error(exc: BaseException) -> tuple[str, str, str, str, bytes | None]:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        data = pickle.dumps(exc)
        pickle.loads(data)  # noqa: S301 (our own bytes: does it come back?)
        pickled: bytes | None = data
    except Exception:
        pickled = None
    return ("error", type(exc).__qualname__, str(exc), tb, pickled)


class _Run:
    def __init__(self, folder: Any, key: str, task: Any, env: MutableMapping[str, str]) -> None:
        self.folder, self.key, self.task, self.env = folder, key, task, env
        self.stopping = False

    def on_stop(self, signum: int, frame: FrameType | None) -> None:
        """The stop signal: ask the callable for its resubmission, save it, mark it, leave."""
        if self.stopping:
            return
        self.stopping = True
        fn, args, kwargs = self.task
        from slurm_gpu.api.task import Resubmission
        from slurm_gpu.checkpoint import contract
        from slurm_gpu.checkpoint.job import mark

        rank = int(self.env.get("RANK", "0") or 0)
        resub = fn.checkpoint(*args, **kwargs)
        if isinstance(resub, Resubmission):
            name = f"{self.key}.task.pkl"
            if rank == 0:
                self.folder.write_obj(name, task_record((resub.fn, resub.args, resub.kwargs)))
                self.folder.write(f"{self.key}.stopped", f"restart {contract.restart_count(self.env)}\n".encode())
            if self.env.get(contract.ENV_DIR):
                mark(self.folder.file(name), step=contract.restart_count(self.env) + 1)
            sys.stderr.write(f"slurm_gpu.api: checkpointed on SIG{signal.Signals(signum).name[3:]}; "
                             "the job is requeued from it\n")
            sys.stderr.flush()
            os._exit(0)
        sys.stderr.write("slurm_gpu.api: stop signal; checkpoint() returned no Resubmission\n")
        sys.stderr.flush()
        os._exit(EXIT_ERROR)


def task_record(task: tuple[Any, tuple[Any, ...], dict[str, Any]]) -> dict[str, Any]:
    """The task file's outer record: plain data (sys.path to import the function's module), then the payload."""
    from slurm_gpu.api.folder import dumps

    return {"format": 1, "sys_path": [p or os.getcwd() for p in sys.path], "payload": dumps(task)}


def run(folder_path: str, key: str, env: MutableMapping[str, str]) -> int:
    from slurm_gpu.adapters.fs import Untrusted
    from slurm_gpu.api.folder import Folder

    try:
        folder = Folder(folder_path, create=False)
        outer = folder.load(f"{key}.task.pkl")
    except (OSError, Untrusted, pickle.UnpicklingError, ValueError) as exc:
        sys.stderr.write(f"slurm_gpu.api: cannot load task {key} from {folder_path}: {exc}\n")
        return EXIT_SETUP
    if not isinstance(outer, dict) or outer.get("format") != 1:
        sys.stderr.write(f"slurm_gpu.api: task {key}: not a task file of this version\n")
        return EXIT_SETUP
    for path in reversed(outer.get("sys_path") or []):
        if path not in sys.path:
            sys.path.append(path)
    env.update(rank_env(env))
    task = pickle.loads(outer["payload"])  # noqa: S301 (from the checked file)
    fn, args, kwargs = task
    state = _Run(folder, key, task, env)
    if callable(getattr(fn, "checkpoint", None)):
        from slurm_gpu.checkpoint.job import stop_signal

        signal.signal(stop_signal(env), state.on_stop)
    rank = int(env.get("RANK", "0") or 0)
    try:
        value = fn(*args, **kwargs)
        result: tuple[Any, ...] = ("ok", value)
        code = 0
    except BaseException as exc:  # the task's own failure, reported to the submitter
        result = _result_error(exc)
        code = EXIT_ERROR
        sys.stderr.write(result[3])
    if rank == 0 or code:
        name = f"{key}.result.pkl" if rank == 0 else f"{key}.result.{rank}.pkl"
        try:
            folder.write_obj(name, result)
        except Exception as exc:  # an unpicklable value: say so in the result
            folder.write_obj(name, _result_error(exc))
            code = EXIT_ERROR
    return code


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) not in (2, 4) or (len(args) == 4 and args[2] != "--array"):
        sys.stderr.write("usage: python -m slurm_gpu.api FOLDER KEY [--array OFFSET]\n")
        return EXIT_SETUP
    key = args[1]
    if len(args) == 4:
        task = os.environ.get("SLURM_ARRAY_TASK_ID", "")
        if not (task.isascii() and task.isdigit() and args[3].isascii() and args[3].isdigit()):
            sys.stderr.write("slurm_gpu.api: --array outside an array task (no SLURM_ARRAY_TASK_ID)\n")
            return EXIT_SETUP
        key = f"{key}_{int(args[3]) + int(task)}"
    return run(args[0], key, os.environ)


if __name__ == "__main__":
    sys.exit(main())
