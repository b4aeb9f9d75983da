# SPDX-License-Identifier: Apache-2.0
"""The job's side of the checkpoint protocol: ``mark``, ``resume_path`` and ``should_stop`` for a
training loop (re-exported by :mod:`slurm_gpu.checkpoint`). This module is an edge: it reads the
environment, installs a signal handler and calls the marker store (adapters/markers.py); the
decisions are the pure :mod:`slurm_gpu.checkpoint.markers` and :mod:`slurm_gpu.checkpoint.contract`.

    from slurm_gpu import checkpoint as ckpt
    ckpt.should_stop()  # installs the handler
    path = ckpt.resume_path()
    for step in range(load(path) if path else 0, total):
        train(step)
        if step % every == 0 or ckpt.should_stop():
            save(path, step)
            ckpt.mark(path, step=step)
            if ckpt.should_stop():
                break
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping
from types import FrameType
from typing import Any

from slurm_gpu.adapters import markers as store
from slurm_gpu.checkpoint import contract
from slurm_gpu.checkpoint.markers import Marker, Step, check_path, check_step, complete_steps, next_step, prune_names

LOGGER = "slurm_gpu.checkpoint"  # warnings go to this logger (logging's last resort: stderr)


class CheckpointError(RuntimeError):
    """mark() cannot record the checkpoint (no directory, a bad value, the disk); one line."""


def _warn(text: str) -> None:
    import logging  # on first warning: gpusub-ckpt's start-up does not pay for it

    logging.getLogger(LOGGER).warning("%s", text)


def marker_dir(env: Mapping[str, str] | None = None) -> str | None:
    """GPUSUB_CKPT_DIR, or None when the protocol is off."""
    value = (os.environ if env is None else env).get(contract.ENV_DIR, "")
    return value or None


def mark_step(path: str, step: int | None = None, *, cost_s: float | None = None, rank: int | None = None,
              world_size: int | None = None, env: Mapping[str, str] | None = None,
              warn: store.Warn = _warn) -> tuple[Marker, Step | None]:
    """mark() with its outcome: (the marker written, the newest complete step after it)."""
    env = os.environ if env is None else env
    directory = marker_dir(env)
    if directory is None:
        raise CheckpointError(f"{contract.ENV_DIR} is not set: the job does not run under the checkpoint "
                              "protocol (gpusub --checkpoint)")
    try:
        env_rank, env_world, _ = contract.identity(env)
        try:
            keep = contract.keep(env)
        except contract.ContractError as exc:  # a bad K does not lose the checkpoint
            warn(f"{exc}; keeping {contract.DEFAULT_KEEP}")
            keep = contract.DEFAULT_KEEP
        rank = env_rank if rank is None else rank
        world = env_world if world_size is None else world_size
        if cost_s is None and _stopped_at is not None:
            cost_s = max(0.0, time.monotonic() - _stopped_at)  # the checkpoint made on the signal
        if step is None:
            step = next_step(store.read_markers(directory, warn=warn).markers, rank)
        full = check_path(os.path.abspath(check_path(os.fspath(path))))  # relative to the payload's directory
        marker = Marker(step=check_step(step), path=full, rank=rank, world_size=world,
                        time=time.time(), job_id=contract.job_id(env), restart_count=contract.restart_count(env),
                        cost_s=cost_s, host=_host(env))
        store.write_marker(directory, marker)
    except (ValueError, TypeError) as exc:  # ContractError, MarkerError: a bad value
        raise CheckpointError(str(exc)) from None
    except OSError as exc:
        raise CheckpointError(f"cannot write the marker in {directory}: {exc.strerror or exc}") from None
    listing = store.read_markers(directory, warn=warn)
    steps = complete_steps(listing.markers)
    prune = prune_names(listing.owned, [s.step for s in steps], keep)
    store.remove_markers(directory, prune + list(listing.stale), warn=warn)
    return marker, (steps[0] if steps else None)


def _host(env: Mapping[str, str]) -> str | None:
    """The Slurm node (SLURMD_NODENAME; several slurmd may share one machine), else the host name."""
    name = (env.get("SLURMD_NODENAME") or os.uname().nodename)[:255]
    return name if name and name.isprintable() else None


def mark(path: str | os.PathLike[str], step: int | None = None, *, cost_s: float | None = None) -> Marker:
    """Record that this rank finished the checkpoint of ``step`` at ``path`` (default step: one past
    this rank's last marked step). Every rank of a multi-rank job marks its own shard; the step
    counts once all have. Raises CheckpointError (one line) when it cannot."""
    return mark_step(os.fspath(path), step, cost_s=cost_s)[0]


def newest_step(env: Mapping[str, str] | None = None, expected_uid: int | None = None,
                warn: store.Warn = _warn) -> Step | None:
    """The newest complete step of GPUSUB_CKPT_DIR (None without directory or complete step)."""
    directory = marker_dir(env)
    if directory is None:
        return None
    steps = complete_steps(store.read_markers(directory, expected_uid, warn=warn).markers)
    return steps[0] if steps else None


def resume_path() -> str | None:
    """The path to resume from: this rank's path of the newest complete step in GPUSUB_CKPT_DIR; without
    the directory, GPUSUB_RESUME_FROM; None when there is nothing to resume. Never raises."""
    try:
        if marker_dir() is None:
            return os.environ.get(contract.ENV_RESUME_FROM) or None
        newest = newest_step()
        if newest is None:
            return None
        try:
            rank = contract.identity(os.environ)[0]
        except contract.ContractError as exc:
            _warn(f"{exc}; resuming from rank 0's path")
            rank = 0
        return newest.path_of(rank)
    except Exception as exc:  # a training loop must not die of its resume lookup
        _warn(f"no resume path: {type(exc).__name__}: {exc}")
        return None


# ---- the stop signal ------------------------------------------------------------------------------

_stopped_at: float | None = None  # time.monotonic() when the stop signal came
_installed: int | None = None  # the signal number our handler is installed for
_replaced: Any = None  # the handler we replaced (SIG_DFL, SIG_IGN, None or a function)
_previous: Any = None  # the same when it is a Python function: called after ours


def _on_signal(signum: int, frame: FrameType | None) -> None:
    global _stopped_at
    if _stopped_at is None:
        _stopped_at = time.monotonic()
    if callable(_previous):
        _previous(signum, frame)


def stop_signal(env: Mapping[str, str] | None = None) -> signal.Signals:
    """The stop signal: GPUSUB_CKPT_SIGNAL by name (USR2 when unset; a bad value warns and uses USR2)."""
    text = (os.environ if env is None else env).get(contract.ENV_SIGNAL)
    try:
        name = contract.signal_name(text)
    except contract.ContractError as exc:
        _warn(f"{exc}; using SIG{contract.DEFAULT_SIGNAL}")
        name = contract.DEFAULT_SIGNAL
    return signal.Signals[f"SIG{name}"]


def install() -> bool:
    """Install the stop handler once (should_stop does on its first call). A Python handler already
    there is chained (called after ours). False when it cannot be installed (not the main thread)."""
    global _installed, _previous, _replaced
    if _installed is not None:
        return True
    sig = stop_signal()
    try:
        previous = signal.signal(sig, _on_signal)
    except ValueError as exc:  # not the main thread of the main interpreter
        _warn(f"cannot install the SIG{sig.name.removeprefix('SIG')} handler: {exc}")
        return False
    _replaced = previous
    _previous = previous if callable(previous) and previous is not _on_signal else None
    _installed = sig
    return True


def should_stop() -> bool:
    """True once the stop signal (GPUSUB_CKPT_SIGNAL, default SIGUSR2) has arrived: checkpoint, mark
    and leave. The first call installs the handler: call it once early, before the signal can come."""
    install()
    return _stopped_at is not None


def _reset() -> None:
    """Tests: restore the handler we replaced and forget the signal."""
    global _stopped_at, _installed, _previous, _replaced
    if _installed is not None:
        signal.signal(_installed, _replaced if _replaced is not None else signal.SIG_DFL)
    _stopped_at, _installed, _previous, _replaced = None, None, None, None
