# SPDX-License-Identifier: Apache-2.0
"""Slurm time strings -> minutes or seconds.

Accepted forms (sbatch.1 ``--time``): ``minutes``, ``minutes:seconds``, ``hours:minutes:seconds``,
``days-hours``, ``days-hours:minutes``, ``days-hours:minutes:seconds``; plus the unit forms
``90s``, ``30m``, ``4h``, ``2d``. A bare integer is minutes, as in Slurm. ``UNLIMITED`` / ``infinite``
give ``None`` where a limit may be unlimited.
"""

from __future__ import annotations

import re

DURATION_FORMS = "minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or 90s/30m/4h/2d"
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# plain strings: re compiles (and caches) them on first parse, so importing this module for
# format_duration_min alone (gpusub's classify path) costs nothing
_UNIT = r"^(\d+)\s*([smhd])$"
_DAYS = r"^(\d+)-(\d+)(?::(\d+))?(?::(\d+))?$"
_COLON = r"^(\d+)(?::(\d+))?(?::(\d+))?$"
UNLIMITED = ("unlimited", "infinite")


def parse_duration_s(value: object) -> int:
    """Parse a duration into seconds. Raises ValueError naming the accepted forms."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"bad duration {value!r}; accepted: {DURATION_FORMS}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"bad duration {value!r}; must not be negative")
        return value * 60
    text = value.strip().lower()
    m = re.match(_UNIT, text)
    if m:
        return int(m.group(1)) * _UNIT_S[m.group(2)]
    m = re.match(_DAYS, text)
    if m:
        d, h, mi, s = (int(g) if g else 0 for g in m.groups())
        if h > 23 or mi > 59 or s > 59:
            raise ValueError(f"bad duration {value!r}; fields out of range")
        return ((d * 24 + h) * 60 + mi) * 60 + s
    m = re.match(_COLON, text)
    if m:
        parts = [int(g) for g in m.groups() if g is not None]
        if len(parts) == 1:
            return parts[0] * 60
        if len(parts) == 2:  # minutes:seconds
            if parts[1] > 59:
                raise ValueError(f"bad duration {value!r}; seconds out of range")
            return parts[0] * 60 + parts[1]
        h, mi, s = parts
        if mi > 59 or s > 59:
            raise ValueError(f"bad duration {value!r}; fields out of range")
        return (h * 60 + mi) * 60 + s
    raise ValueError(f"bad duration {value!r}; accepted: {DURATION_FORMS}")


def parse_duration_min(value: object) -> int:
    """Parse a duration into whole minutes, rounding seconds up (Slurm does the same)."""
    return -(-parse_duration_s(value) // 60)


def format_duration_min(minutes: int) -> str:
    """Minutes -> Slurm's ``D-HH:MM:SS`` (or ``HH:MM:SS`` under a day)."""
    d, rem = divmod(minutes, 1440)
    h, m = divmod(rem, 60)
    return f"{d}-{h:02d}:{m:02d}:00" if d else f"{h:02d}:{m:02d}:00"
