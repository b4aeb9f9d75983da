# SPDX-License-Identifier: Apache-2.0
"""One poll for all jobs: the state of every handle this process holds (per cluster: SLURM_CONF and
user) comes from ONE ``squeue`` call per interval, whatever the number of jobs; jobs that left the
queue (MinJobAge passed) are asked of ``sacct`` in one batched call. The interval backs off (x1.5 up to
``max_interval_s``) while nothing changes and is reset when a job is added or a state changes. A failed
squeue keeps the last states and backs off; more than ``max_failures`` in a row raise its error.

Every call goes through the one runner (slurm_gpu/adapters/slurm/runner.py, bounded); ``calls``
counts them by command, for tests and the benchmark.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from slurm_gpu.adapters.slurm.runner import run_slurm
from slurm_gpu.api.states import SACCT_FIELDS, JobStatus, parse_sacct, parse_squeue, squeue_format
from slurm_gpu.errors import SubmitError

Runner = Callable[..., Any]  # run_slurm's signature


class Poller:
    def __init__(self, env: Mapping[str, str], *, runner: Runner = run_slurm, interval_s: float = 1.0,
                 max_interval_s: float = 10.0, timeout_s: float = 30.0, max_failures: int = 5,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.env = dict(env)
        self.runner = runner
        self.min_interval_s = interval_s
        self.max_interval_s = max(interval_s, max_interval_s)
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.clock = clock
        self.calls: Counter[str] = Counter()
        self._ids: set[str] = set()
        self._active: set[str] = set()  # added and not seen finished
        self.failures = 0  # squeue calls failed in a row
        self.max_failures = max_failures
        self._status: dict[str, JobStatus] = {}
        self._last = float("-inf")
        self._lock = threading.Lock()

    def add(self, job_ids: Iterable[str]) -> None:
        with self._lock:
            ids = list(job_ids)
            self._ids.update(ids)
            self._active.update(j for j in ids if not (j in self._status and self._status[j].finished))
            self.interval_s = self.min_interval_s

    def forget(self, job_ids: Iterable[str]) -> None:
        with self._lock:
            for j in job_ids:
                self._ids.discard(j)
                self._active.discard(j)

    def status(self, job_id: str, fresh: bool = False) -> JobStatus | None:
        self.refresh(force=fresh)
        return self._status.get(job_id)

    def due_in(self) -> float:
        return max(0.0, self._last + self.interval_s - self.clock())

    def refresh(self, force: bool = False) -> bool:
        """One squeue call for every active handle when the interval has passed (or ``force``); False
        when it was not yet due or no job is active. O(1) when not due: a caller may ask per job."""
        with self._lock:
            if not self._active or (not force and self.clock() < self._last + self.interval_s):
                return False
            self._last = self.clock()
            try:
                seen = self._squeue()
            except SubmitError:  # a controller restart, a munge hiccup: keep the last states, ask again
                self.failures += 1
                self.interval_s = min(self.max_interval_s, self.interval_s * 1.5)
                if self.failures > self.max_failures:
                    raise
                return False
            self.failures = 0
            changed = False
            gone: list[str] = []
            for jid in list(self._active):
                new = seen.get(jid)
                if new is None:
                    gone.append(jid)
                    continue
                old = self._status.get(jid)
                if old is None or (old.state, old.restarts) != (new.state, new.restarts):
                    changed = True
                self._status[jid] = new
                if new.finished:
                    self._active.discard(jid)
            if gone:
                for jid, rec in self._sacct(gone).items():
                    if rec.finished:
                        self._status[jid] = rec
                        self._active.discard(jid)
                        changed = True
            self.interval_s = self.min_interval_s if changed else min(self.max_interval_s, self.interval_s * 1.5)
            return True

    def _run(self, argv: list[str]) -> str:
        self.calls[argv[0]] += 1
        proc = self.runner(argv, env=self.env, timeout_s=self.timeout_s)
        if proc.returncode != 0:
            raise SubmitError(f"{argv[0]}: {(proc.stderr or '').strip()[:200]}")
        return str(proc.stdout)

    def _squeue(self) -> dict[str, JobStatus]:
        return parse_squeue(self._run(["squeue", "-h", "-r", "-t", "all", "-u", str(os.geteuid()),
                                       "-O", squeue_format()]))

    def _sacct(self, job_ids: list[str]) -> dict[str, JobStatus]:
        bases = sorted({j.split("_")[0] for j in job_ids}, key=int)
        try:
            text = self._run(["sacct", "-X", "-n", "-P", "-j", ",".join(bases), "-o", ",".join(SACCT_FIELDS)])
        except SubmitError:
            return {}  # no accounting: such jobs stay unknown until it answers
        found = parse_sacct(text)
        return {j: found[j] for j in job_ids if j in found}


_SHARED: dict[tuple[str, int], Poller] = {}
_SHARED_LOCK = threading.Lock()


def shared_poller(env: Mapping[str, str], **kwargs: Any) -> Poller:
    """The process's poller for the cluster ``env`` names (SLURM_CONF) and this user."""
    key = (env.get("SLURM_CONF", "/etc/slurm/slurm.conf"), os.geteuid())
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = Poller(env, **kwargs)
        return _SHARED[key]


__all__ = ["Poller", "shared_poller"]
