# SPDX-License-Identifier: Apache-2.0
"""The ``#SBATCH`` lines of a batch script, lexed exactly as sbatch lexes them (src/sbatch/opt.c,
``_opt_batch_script`` and ``get_argument``). Pure: takes the script's text."""

from __future__ import annotations

from slurm_gpu.slurm.release import Version, as_version


def split_directive(text: str, version: Version | None = None) -> list[str]:
    """Split what follows ``#SBATCH`` the way sbatch does (src/sbatch/opt.c get_argument).

    Single and double quotes group and are removed; a backslash makes the next character literal;
    an unquoted, unescaped ``#`` starts a comment; an empty argument (``""``) ends the line. From
    24.05 on ``\\ `` keeps a space inside an argument; before that it ends the argument.
    Raises ValueError on an unmatched quote or an argument that starts with ``:``.
    """
    joins = version is None or as_version(version) >= (24, 5, 0)
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


# slurmctld refuses a batch script over SchedulerParameters=max_script_size, 4 MiB by default
# (measured on 22.05.8: 4194304 bytes are accepted, 4194305 give "Batch job submission failed: Pathname
# of a file, directory or other parameter too long").
DEFAULT_MAX_SCRIPT_BYTES = 4 * 1024 * 1024

# sbatch's own messages (src/sbatch/sbatch.c), measured on 22.05.8, in the order sbatch checks them;
# sbatch prints each over two or three "sbatch: error:" lines, here joined with one space.
SCRIPT_EMPTY = "Batch script is empty!"
SCRIPT_WHITESPACE = "Batch script contains only whitespace!"
SCRIPT_NO_SHEBANG = ("This does not look like a batch script.  The first line must start with #! "
                     "followed by the path to an interpreter. For instance: #!/bin/sh")
SCRIPT_NUL = "The Slurm controller does not allow scripts that contain a NULL character '\\0'."
SCRIPT_DOS = "Batch script contains DOS line breaks (\\r\\n) instead of expected UNIX line breaks (\\n)."
SCRIPT_TOO_BIG = ("Batch job submission failed: Pathname of a file, directory or other parameter too long "
                  "(the script has {size} bytes; this cluster takes at most {limit}: "
                  "SchedulerParameters=max_script_size)")


def check_script(script_text: str, max_bytes: int = DEFAULT_MAX_SCRIPT_BYTES) -> None:
    """Refuse a batch script the way sbatch (and slurmctld, for the size) refuses it.

    Raises ValueError with sbatch's message. ``script_text`` is the script as read (bytes that are not
    UTF-8 kept as surrogates); ``max_bytes`` is the cluster's max_script_size.
    """
    if script_text == "":
        raise ValueError(SCRIPT_EMPTY)
    if not script_text.strip(" \t\n\v\f\r"):
        raise ValueError(SCRIPT_WHITESPACE)
    if not script_text.startswith("#!"):
        raise ValueError(SCRIPT_NO_SHEBANG)
    if "\0" in script_text:
        raise ValueError(SCRIPT_NUL)
    if "\r\n" in script_text:
        raise ValueError(SCRIPT_DOS)
    size = len(script_text.encode("utf-8", "surrogateescape"))
    if size > max_bytes:
        raise ValueError(SCRIPT_TOO_BIG.format(size=size, limit=max_bytes))


_HETJOB_WORDS = ("hetjob", "packjob")  # packjob: 22.05.8 warns that it is deprecated, still splits


def script_directives(script_text: str, version: Version | None = None) -> list[tuple[list[str], list[int]]]:
    """The ``#SBATCH`` arguments of a script's header with their 1-based line numbers, one
    (words, lines) pair per heterogeneous-job component (a ``#SBATCH hetjob`` line starts the next one;
    a normal script has one component).

    sbatch reads directives until the first line that is neither blank nor a comment; ``#SBATCH``
    must start the line (``#SLURM`` is accepted too). ``#PBS``/``#BSUB`` lines, which sbatch would
    translate, are marked with the word ``"\0wrapper"`` for the caller to refuse or drop.
    Raises ValueError("line N: ...").
    """
    components: list[tuple[list[str], list[int]]] = [([], [])]
    for lineno, line in enumerate(script_text.split("\n"), start=1):
        args, lines = components[-1]
        if line.startswith("#SBATCH") or line.startswith("#SLURM"):
            rest = line[7:] if line.startswith("#SBATCH") else line[6:]
            first = (rest.split() or [""])[0].lower()
            if first in _HETJOB_WORDS:
                components.append(([], []))
                continue
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
    return components


__all__ = ["split_directive", "script_directives", "check_script", "DEFAULT_MAX_SCRIPT_BYTES"]
