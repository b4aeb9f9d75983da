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
from hashlib import sha1  # jinja2 has loaded hashlib already

import jinja2
from jinja2.bccache import Bucket

from slurm_gpu.submit.private_files import private_dir, read_private, write_private

__all__ = ["PrivateBytecodeCache", "bytecode_cache", "read_private"]


# The Environment settings that shape compiled code: an entry is kept per combination (Jinja2's own
# key is the template's name and file only, and its checksum the template's source only).
_COMPILE_SETTINGS = ("block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
                     "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix",
                     "trim_blocks", "lstrip_blocks", "newline_sequence", "keep_trailing_newline", "autoescape",
                     "optimized", "extensions")


class PrivateBytecodeCache(jinja2.BytecodeCache):
    """Jinja2's bytecode cache in one private directory (created mode 0700 when missing)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.usable = self._usable_dir()

    def _usable_dir(self) -> bool:
        return private_dir(self.directory)

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
        if self.usable:
            write_private(self._entry(bucket), bucket.bytecode_to_string())


@functools.lru_cache(maxsize=4)
def bytecode_cache(directory: str) -> PrivateBytecodeCache:
    """One cache object per directory and process (the renderer keeps one Environment per cache)."""
    return PrivateBytecodeCache(directory)
