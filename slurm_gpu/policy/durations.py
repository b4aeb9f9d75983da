# SPDX-License-Identifier: Apache-2.0
"""Policy durations on top of :mod:`slurm_gpu.units` (the one time grammar).

A YAML integer is minutes, as a bare number is in Slurm; text follows ``units.parse_time_seconds``
(Slurm's forms plus ``90s``/``30m``/``4h``/``2d``). ``UNLIMITED`` / ``INFINITE`` (``UNLIMITED``)
mean "no limit" where a limit may be unlimited.
"""

from __future__ import annotations

from slurm_gpu.units import DURATION_FORMS, MAX_TIME_MINUTES, UNLIMITED_WORDS, UnitError, parse_time_seconds
from slurm_gpu.units import format_time_minutes as format_duration_min

UNLIMITED = UNLIMITED_WORDS
__all__ = ["DURATION_FORMS", "UNLIMITED", "format_duration_min", "parse_duration_min", "parse_duration_s"]


def parse_duration_s(value: object) -> int:
    """Parse a duration into seconds. Raises ValueError naming the accepted forms."""
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value <= MAX_TIME_MINUTES:
            raise UnitError(f"bad duration {value!r}: not 0..{MAX_TIME_MINUTES} minutes; accepted: {DURATION_FORMS}")
        return value * 60
    return parse_time_seconds(value)  # type: ignore[arg-type]  # units refuses non-text with a clear message


def parse_duration_min(value: object) -> int:
    """Parse a duration into whole minutes, rounding seconds up (Slurm does the same)."""
    return -(-parse_duration_s(value) // 60)
