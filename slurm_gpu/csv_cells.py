# SPDX-License-Identifier: Apache-2.0
"""CSV cells a spreadsheet will not run: the one helper of every CSV the package writes (pure).

A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a formula to Excel,
LibreOffice and Google Sheets (``=cmd|' /C calc'!A0``, ``=HYPERLINK(...)``). Trace job ids, partition
names and rejection reasons come from the user's files, so each such cell gets a single quote in front,
as OWASP's "CSV Injection" advises; spreadsheets show the text, without the quote. A plain number (``-5``,
``+1.5e3``) stays a number. :func:`unquote` reads our own CSV back (the lab replay record).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def cell(value: object) -> object:
    """``value`` as a CSV writer should get it: a formula-looking string quoted, anything else as is."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def row(values: Iterable[object]) -> list[object]:
    """Every cell of one row through :func:`cell`."""
    return [cell(v) for v in values]


def unquote(text: str) -> str:
    """The text :func:`cell` was given (for reading our own CSV files back)."""
    return text[1:] if text.startswith("'") and text[1:].startswith(FORMULA_START) else text


__all__ = ["FORMULA_START", "cell", "row", "unquote"]
