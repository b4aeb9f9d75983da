# SPDX-License-Identifier: Apache-2.0
"""gpusub's compiled templates, kept per user: a ``jinja2.BytecodeCache`` under $XDG_CACHE_HOME.

Parsing and compiling the four templates costs about 20 ms, every run; loading them compiled costs
well under one. An entry is Jinja2's own bucket (its format magic, the template source's checksum,
the marshalled code), so a changed template, Jinja2 or Python is compiled afresh. Loading marshalled
code runs it, so an entry is read only when it is a regular file (not a link) with one name, owned by
the current user and writable by nobody else, in a directory that is the user's own and writable by
nobody else; anything else is ignored (the template is compiled, the same text comes out).
"""

from __future__ import annotations

import functools
import os
import stat
from hashlib import sha1  # jinja2 has loaded hashlib already

import jinja2
from jinja2.bccache import Bucket

_MAX_ENTRY = 1024 * 1024
# The Environment settings that shape compiled code: an entry is kept per combination (Jinja2's own
# key is the template's name and file only, and its checksum the template's source only).
_COMPILE_SETTINGS = ("block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
                     "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix",
                     "trim_blocks", "lstrip_blocks", "newline_sequence", "keep_trailing_newline", "autoescape",
                     "optimized", "extensions")


def _private(st: os.stat_result) -> bool:
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def read_private(path: str, limit: int = _MAX_ENTRY) -> bytes | None:
    """The bytes of ``path`` when it is the user's own private regular file; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or not _private(st) or st.st_size > limit:
            return None
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read(limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


class PrivateBytecodeCache(jinja2.BytecodeCache):
    """Jinja2's bytecode cache in one private directory (created mode 0700 when missing)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.usable = self._usable_dir()

    def _usable_dir(self) -> bool:
        try:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            st = os.lstat(self.directory)
        except OSError:
            return False
        return stat.S_ISDIR(st.st_mode) and _private(st)

    def _entry(self, bucket: Bucket) -> str:
        env = bucket.environment
        settings = [getattr(env, name, None) for name in _COMPILE_SETTINGS]
        digest = sha1(repr([sorted(v) if isinstance(v, dict) else v for v in settings]).encode()).hexdigest()
        return os.path.join(self.directory, f"template-{bucket.key}-{digest[:12]}.bin")

    def load_bytecode(self, bucket: Bucket) -> None:
        data = read_private(self._entry(bucket)) if self.usable else None
        if data:
            bucket.bytecode_from_string(data)  # a stale or foreign-format entry leaves the bucket empty

    def dump_bytecode(self, bucket: Bucket) -> None:
        if not self.usable:
            return
        entry = self._entry(bucket)
        tmp = f"{entry}.{os.getpid()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(bucket.bytecode_to_string())
            os.replace(tmp, entry)
        except OSError:  # a full or read-only disk: no cache, same text
            try:
                os.unlink(tmp)
            except OSError:
                pass


@functools.lru_cache(maxsize=4)
def bytecode_cache(directory: str) -> PrivateBytecodeCache:
    """One cache object per directory and process (the renderer keeps one Environment per cache)."""
    return PrivateBytecodeCache(directory)
