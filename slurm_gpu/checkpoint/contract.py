# SPDX-License-Identifier: Apache-2.0
"""The checkpoint protocol's names and environment, read from a mapping (pure: the caller hands the
environment in). docs/checkpointing.md states the contract; outside checks rely on these names.

Rank identity, in order of precedence (the first complete, valid pair wins):

1. ``RANK`` / ``WORLD_SIZE``: set by torchrun (and torch.distributed launchers) for each worker. Under
   ``srun torchrun ...`` Slurm's task id names the node's launcher, not the worker, so the worker's own
   rank is the one that counts.
2. ``SLURM_PROCID`` / ``SLURM_STEP_NUM_TASKS`` (else ``SLURM_NTASKS``), inside an ``srun`` step only
   (``SLURM_STEP_ID`` a normal step id): every task of an ``srun`` step is one rank.
3. Otherwise a single process: rank 0 of 1. The batch script itself is not an srun step, so a plain
   command in the batch script marks alone even when the job asked for several tasks. 26.05 sets
   ``SLURM_STEP_ID=-5`` (the batch step) there; 22.05 and 24.11 leave it unset: the special step ids
   (batch, extern, interactive) are slurm_gpu.slurm.release.SPECIAL_STEP_IDS.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, cast, get_args

from slurm_gpu.slurm.release import srun_step_id

ENV_DIR = "GPUSUB_CKPT_DIR"  # the per-job directory, the same across requeues
ENV_RESTART_COUNT = "GPUSUB_RESTART_COUNT"  # 0 on the first run
ENV_RESUME_FROM = "GPUSUB_RESUME_FROM"  # the newest complete step's path; unset when there is none
ENV_KEEP = "GPUSUB_CKPT_KEEP"  # complete steps whose markers are kept
ENV_SIGNAL = "GPUSUB_CKPT_SIGNAL"  # the stop signal (a name: USR2, SIGUSR2)

StopSignal = Literal["USR1", "USR2", "TERM", "INT", "HUP"]
STOP_SIGNALS: tuple[str, ...] = get_args(StopSignal)
DEFAULT_SIGNAL: StopSignal = "USR2"
DEFAULT_KEEP = 3
MAX_KEEP = 1000
DEFAULT_GRACE_S = 60  # the policy's defaults.ckpt_grace
MAX_WORLD = 1 << 20  # ranks; far beyond any job
MAX_STEP = 10 ** 15  # a step number (a training step or a counter)


class ContractError(ValueError):
    """A value of the protocol's environment that does not follow the contract (one line)."""


def _int(env: Mapping[str, str], name: str, lo: int, hi: int) -> int | None:
    """The variable as an integer lo..hi; None when unset; ContractError when set but bad."""
    text = env.get(name)
    if text is None:
        return None
    t = text.strip()
    if not (t.isascii() and t.isdigit() and len(t) <= 16) or not lo <= int(t) <= hi:
        raise ContractError(f"{name}={text[:40]!r} is not a whole number {lo}..{hi}")
    return int(t)


def identity(env: Mapping[str, str]) -> tuple[int, int, str]:
    """(rank, world size, where they came from) by the precedence above. A pair that is set but bad
    (a rank outside the world) raises ContractError: marking under a wrong rank would corrupt the step."""
    pairs = [("RANK", "WORLD_SIZE")]
    if srun_step_id(env.get("SLURM_STEP_ID")) is not None:
        pairs.append(("SLURM_PROCID", "SLURM_STEP_NUM_TASKS" if "SLURM_STEP_NUM_TASKS" in env else "SLURM_NTASKS"))
    for rank_name, world_name in pairs:
        world = _int(env, world_name, 1, MAX_WORLD)
        rank = _int(env, rank_name, 0, MAX_WORLD - 1)
        if world is None or rank is None:
            continue
        if rank >= world:
            raise ContractError(f"{rank_name}={rank} is not below {world_name}={world}")
        return rank, world, f"{rank_name}/{world_name}"
    return 0, 1, "single process"


def restart_count(env: Mapping[str, str]) -> int:
    """GPUSUB_RESTART_COUNT, else Slurm's SLURM_RESTART_COUNT, else 0 (a bad value counts as unset)."""
    for name in (ENV_RESTART_COUNT, "SLURM_RESTART_COUNT"):
        try:
            value = _int(env, name, 0, 1 << 31)
        except ContractError:
            continue
        if value is not None:
            return value
    return 0


def job_id(env: Mapping[str, str]) -> str | None:
    """SLURM_JOB_ID when it is a job id (digits), else None."""
    text = env.get("SLURM_JOB_ID", "").strip()
    return text if text.isascii() and text.isdigit() and len(text) <= 20 else None


def keep(env: Mapping[str, str]) -> int:
    """GPUSUB_CKPT_KEEP (1..MAX_KEEP), default DEFAULT_KEEP; ContractError when set but bad."""
    value = _int(env, ENV_KEEP, 1, MAX_KEEP)
    return DEFAULT_KEEP if value is None else value


def signal_name(text: str | None) -> StopSignal:
    """A stop signal's name without ``SIG`` (``usr2``, ``SIGUSR2`` -> ``USR2``); None -> the default."""
    if text is None or not text.strip():
        return DEFAULT_SIGNAL
    name = text.strip().upper()
    name = name[3:] if name.startswith("SIG") else name
    if name in STOP_SIGNALS:
        return cast(StopSignal, name)
    raise ContractError(f"{ENV_SIGNAL}={text[:40]!r} is not a stop signal; accepted: {', '.join(STOP_SIGNALS)}")
