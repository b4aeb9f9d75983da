# SPDX-License-Identifier: Apache-2.0
"""Functions the API tests run in jobs (importable by the worker: the tests' sys.path travels with the task)."""

from __future__ import annotations

import json
import os
import signal
import socket
import time

from slurm_gpu.api.task import Resubmission


def add(a: int, b: int) -> int:
    print(f"adding {a} {b}", flush=True)
    return a + b


def square(x: int) -> int:
    return x * x


def boom() -> None:
    raise ValueError("boom from the job")


def rank_info(out_dir: str) -> dict[str, object]:
    """This task's rank environment, GPUs and CPU affinity, also written to OUT_DIR/rank-R.json."""
    keys = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES",
            "SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "SLURMD_NODENAME", "SLURM_JOB_ID")
    info: dict[str, object] = {k: os.environ.get(k) for k in keys}
    info["host"] = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    info["cpus"] = sorted(os.sched_getaffinity(0))
    with open(os.path.join(out_dir, f"rank-{info['RANK']}.json"), "w", encoding="utf-8") as fh:
        json.dump(info, fh)
    return info


class Count:
    """Counts to ``total``, one step per ``dt`` seconds; checkpointable: on the stop signal it returns
    itself with the count reached, and the next run goes on from there. ``starts``: (restart count, count
    at start) of every run."""

    def __init__(self, total: int, dt: float, at: int = 0, starts: tuple[tuple[int, int], ...] = ()) -> None:
        self.total, self.dt, self.at, self.starts = total, dt, at, starts

    def __call__(self) -> dict[str, object]:
        self.starts = (*self.starts, (int(os.environ.get("GPUSUB_RESTART_COUNT", "0")), self.at))
        print(f"start restart={self.starts[-1][0]} at={self.at}", flush=True)
        while self.at < self.total:
            time.sleep(self.dt)
            # one step is its count and its line together: the stop signal (whose handler calls
            # checkpoint()) waits until both are done, or the log and the checkpoint could disagree by a step
            # (a 24.11 CI run: the signal came between the two, the count 14 saved, "at 14" never printed)
            held = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
            try:
                self.at += 1
                print(f"at {self.at}", flush=True)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
        return {"at": self.at, "starts": [list(s) for s in self.starts]}

    def checkpoint(self) -> Resubmission[dict[str, object]]:
        return Resubmission(Count(self.total, self.dt, self.at, self.starts))
