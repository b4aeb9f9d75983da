# SPDX-License-Identifier: Apache-2.0
"""The ``#SBATCH`` lines of a batch script, lexed exactly as sbatch lexes them (src/sbatch/opt.c,
``_opt_batch_script`` and ``get_argument``). Pure: takes the script's text."""

from __future__ import annotations

Version = tuple[int, int]


def split_directive(text: str, version: Version | None = None) -> list[str]:
    """Split what follows ``#SBATCH`` the way sbatch does (src/sbatch/opt.c get_argument).

    Single and double quotes group and are removed; a backslash makes the next character literal;
    an unquoted, unescaped ``#`` starts a comment; an empty argument (``""``) ends the line. From
    24.05 on ``\\ `` keeps a space inside an argument; before that it ends the argument.
    Raises ValueError on an unmatched quote or an argument that starts with ``:``.
    """
    joins = version is None or version >= (24, 5)
    out: list[str] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos].isspace():
            pos += 1
        if pos < n and text[pos] == ":":
            raise ValueError(f"unexpected ':' in [{text.strip()}]")
        arg: list[str] = []
        quoted, qchar, escape = False, "", False
        while pos < n and (quoted or not text[pos].isspace()):
            ch = text[pos]
            if escape:
                escape = False
            elif ch == "\\":
                pos += 1
                if joins and pos < n and text[pos] == " ":
                    arg.append(" ")
                    pos += 1
                else:
                    escape = True
                continue
            elif quoted:
                if ch == qchar:
                    quoted = False
                    pos += 1
                    continue
            elif ch in "\"'":
                quoted, qchar = True, ch
                pos += 1
                continue
            elif ch == "#":
                break
            arg.append(ch)
            pos += 1
        if quoted:
            raise ValueError(f"unmatched {qchar} in [{text.strip()}]")
        if not arg:
            return out
        out.append("".join(arg))


def script_directives(script_text: str, version: Version | None = None) -> tuple[list[str], list[int]]:
    """All ``#SBATCH`` arguments of a script's header with their 1-based line numbers.

    sbatch reads directives until the first line that is neither blank nor a comment; ``#SBATCH``
    must start the line (``#SLURM`` is accepted too). ``#PBS``/``#BSUB`` lines, which sbatch would
    translate, are marked with the word ``"\0wrapper"`` for the caller to refuse or drop.
    Raises ValueError("line N: ...").
    """
    args: list[str] = []
    lines: list[int] = []
    for lineno, line in enumerate(script_text.split("\n"), start=1):
        if line.startswith("#SBATCH") or line.startswith("#SLURM"):
            rest = line[7:] if line.startswith("#SBATCH") else line[6:]
            first = (rest.split() or [""])[0].lower()
            if first in ("hetjob", "packjob"):
                raise ValueError(f"line {lineno}: heterogeneous jobs (#SBATCH {first}) are not supported by gpusub")
            try:
                words = split_directive(rest, version)
            except ValueError as exc:
                raise ValueError(f"line {lineno}: {exc}") from None
            args.extend(words)
            lines.extend([lineno] * len(words))
            continue
        stripped = line.lstrip()
        if stripped and not stripped.startswith("#"):
            break
        if line.startswith(("#PBS", "#BSUB")):
            args.append("\0wrapper")
            lines.append(lineno)
    return args, lines


__all__ = ["split_directive", "script_directives"]
