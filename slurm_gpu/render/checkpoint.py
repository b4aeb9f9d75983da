# SPDX-License-Identifier: Apache-2.0
"""The rendered script's side of the checkpoint protocol (docs/checkpointing.md), pure: whether a job
runs under the protocol, with which signal, lead, grace and limits, and the sbatch options that go
with it. render/shell.py (CHECKPOINT and the launch) turns these settings into bash.

This is the one place that decides the job's ``--signal``: with the protocol on it is
``B:<ckpt_signal>@<lead>`` (the lead time is the user's own ``--signal``'s when they gave one, else
the policy's ``signal_lead_time``), replacing the ``--signal=B:USR1@lead`` the classifier adds for a
``checkpoint_required`` class.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from slurm_gpu.checkpoint.contract import (
    DEFAULT_GRACE_S,
    DEFAULT_KEEP,
    DEFAULT_SIGNAL,
    ContractError,
    signal_name,
)
from slurm_gpu.errors import UsageError
from slurm_gpu.plain import NamedTuple
from slurm_gpu.slurm.sbatch.table import GpusubOptions

if TYPE_CHECKING:  # the types only
    from slurm_gpu.policy.model import Policy
    from slurm_gpu.request import Decision

DEFAULT_LEAD_S = 120  # the policy's defaults.signal_lead_time
DEFAULT_MAX_REQUEUES = 3  # the policy's defaults.max_requeues
MIN_LEAD_S = 30  # Slurm checks --signal about every 30 s: a shorter lead can arrive after the end
_LEAD = re.compile(r"@([0-9]{1,9})$")


class CheckpointSettings(NamedTuple):
    """What the rendered script needs to run the protocol."""

    signal: str = DEFAULT_SIGNAL  # a name without SIG (contract.STOP_SIGNALS)
    grace_s: int = DEFAULT_GRACE_S  # seconds the payload has to save after the stop signal
    lead_s: int = DEFAULT_LEAD_S  # the stop signal comes this long before the time limit
    max_requeues: int = DEFAULT_MAX_REQUEUES  # restarts after which the job no longer requeues itself
    keep: int = DEFAULT_KEEP  # complete steps whose markers are kept (GPUSUB_CKPT_KEEP)
    python: str = ""  # an interpreter (reads the markers on the job's start and stop)
    library: str = ""  # the directory that holds the slurm_gpu package it imports
    why: str = ""  # why the protocol is on (a comment in the script)


def _grace(text: str) -> int:
    from slurm_gpu.units import UnitError, parse_time_seconds

    try:
        return parse_time_seconds(text)
    except (UnitError, ValueError) as exc:
        raise UsageError(f"--ckpt-grace: {exc}") from None


def settings_for(gpusub_opts: GpusubOptions, policy: Policy | None, decision: Decision | None, python: str = "",
                 library: str = "") -> CheckpointSettings | None:
    """The protocol's settings for a submission, or None when it is off: on with ``--checkpoint`` or
    when the decision's class has ``checkpoint_required``. ``--ckpt-signal``/``--ckpt-grace`` override the
    policy's defaults; given without the protocol they are a usage error (they would do nothing)."""
    job_class = None
    if policy is not None and decision is not None and decision.job_class:
        job_class = next((c for c in policy.classes if c.name == decision.job_class), None)
    required = job_class is not None and job_class.checkpoint_required
    asked = gpusub_opts.checkpoint
    if not (asked or required):
        for name, value in (("ckpt-signal", gpusub_opts.ckpt_signal), ("ckpt-grace", gpusub_opts.ckpt_grace)):
            if value is not None:
                raise UsageError(f"--{name} needs --checkpoint (or a job class with checkpoint_required)")
        return None
    d = policy.defaults if policy is not None else None
    try:
        sig = signal_name(gpusub_opts.ckpt_signal or (d.ckpt_signal if d is not None else None))
    except ContractError:
        raise UsageError(f"--ckpt-signal {str(gpusub_opts.ckpt_signal)[:40]!r}: accepted: USR1, USR2, "
                         "TERM, INT, HUP (with or without SIG)") from None
    if gpusub_opts.ckpt_grace is not None:
        grace = _grace(gpusub_opts.ckpt_grace)
    else:
        grace = d.ckpt_grace_s if d is not None else DEFAULT_GRACE_S
    why = "gpusub --checkpoint" if asked else f"class {job_class.name if job_class else '?'}: checkpoint_required"
    if d is None:  # no policy: the protocol's own defaults
        return CheckpointSettings(signal=sig, grace_s=grace, python=python, library=library, why=why)
    return CheckpointSettings(signal=sig, grace_s=grace, lead_s=d.signal_lead_time_s, max_requeues=d.max_requeues,
                              keep=d.ckpt_keep, python=python, library=library, why=why)


def user_lead(options: Iterable[tuple[str, str | None]]) -> int | None:
    """The lead time of the user's own ``--signal=...@T`` (the last one), if any."""
    lead = None
    for name, value in options:
        if name == "signal" and value:
            m = _LEAD.search(value)
            if m:
                lead = int(m.group(1))
    return lead


def protocol_options(settings: CheckpointSettings, user_options: Iterable[tuple[str, str | None]]) -> list[str]:
    """The sbatch options the protocol needs (they win over the user's and the policy's): the signal to
    the batch shell at the lead time, requeue allowed, and logs appended across reruns."""
    lead = user_lead(user_options)
    return [f"--signal=B:{settings.signal}@{lead if lead is not None else settings.lead_s}", "--requeue",
            "--open-mode=append"]


def warnings_for(settings: CheckpointSettings, lead_s: int,
                 recorded: tuple[float, str] | None = None) -> list[str]:
    """Settings that cannot work as the user expects. ``recorded``: the longest checkpoint an earlier job
    in the same work directory marked (seconds, its job id), when known."""
    out = []
    if recorded is not None and settings.grace_s < recorded[0]:
        out.append(f"checkpoint: the grace time ({settings.grace_s}s) is shorter than the checkpoint job "
                   f"{recorded[1]} recorded ({recorded[0]:.0f}s, in its markers): the payload may be killed "
                   "before it has saved; raise --ckpt-grace")
    if settings.grace_s >= lead_s:
        out.append(f"checkpoint: the grace time ({settings.grace_s}s) is not shorter than the signal's lead "
                   f"time ({lead_s}s): the time limit can end the job before the payload has saved")
    if lead_s < MIN_LEAD_S:
        out.append(f"checkpoint: a signal lead time of {lead_s}s is shorter than Slurm's {MIN_LEAD_S}s check "
                   "interval: the stop signal may come too late")
    return out


__all__ = ["CheckpointSettings", "settings_for", "protocol_options", "user_lead", "warnings_for"]
