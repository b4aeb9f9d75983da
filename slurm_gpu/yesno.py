# SPDX-License-Identifier: Apache-2.0
"""The one reading of a yes/no setting (the hooks' configuration, the simulator's settings).

No imports: the node hooks use it, and they start for every job.
"""

from __future__ import annotations

YES = ("1", "yes", "true", "on")
NO = ("0", "no", "false", "off")


def yes_no(text: str) -> bool | None:
    """True for ``1/yes/true/on``, False for ``0/no/false/off`` (any case); None for anything else
    (the caller says what it expected)."""
    low = text.lower()
    if low in YES:
        return True
    if low in NO:
        return False
    return None
