# SPDX-License-Identifier: Apache-2.0
"""ASCII digits: the one check for a number read from the environment, a file, an argument or a record.

``str.isdigit()`` is true for every Unicode digit (``"٣"``, ``"³"``), ``re``'s ``\\d`` matches the decimal
ones unless the pattern has ``re.ASCII``, and ``int()`` reads them (``int("٣") == 3``; ``int("³")`` raises).
So ``LOCAL_RANK=٣`` would be rank 3. Numbers here are ASCII ``0-9`` only: :func:`is_digits` is the
check, :func:`ascii_int` the parse; patterns write ``[0-9]`` (tests/test_ascii_digits.py keeps it so).
No imports: the node hooks use it, and they start for every job.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing_extensions import TypeIs


def is_digits(text: object) -> TypeIs[str | bytes]:
    """True for a non-empty ``str`` (or ``bytes``) of ASCII ``0-9`` only."""
    return isinstance(text, (str, bytes)) and text.isascii() and text.isdigit()


def ascii_int(text: object, hi: int | None = None, max_len: int = 20) -> int | None:
    """``text`` (ASCII digits, at most ``max_len`` of them, no sign, no space) as an int at most ``hi``;
    None for anything else."""
    if not is_digits(text) or len(text) > max_len:
        return None
    value = int(text)
    return None if hi is not None and value > hi else value


__all__ = ["is_digits", "ascii_int"]
