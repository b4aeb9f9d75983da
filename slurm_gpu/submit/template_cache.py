# SPDX-License-Identifier: Apache-2.0
"""gpusub's compiled templates, kept per user: a ``jinja2.BytecodeCache`` under $XDG_CACHE_HOME
(filesystem adapter).

This is Jinja2's documented extension point for caching compiled templates (a subclass that loads and
dumps a ``jinja2.bccache.Bucket``). Parsing and compiling the four templates costs about 14 ms of CPU,
every run; loading them compiled about 1.5 ms. An entry is Jinja2's own bucket (its format magic with
Python's version, the template source's checksum, the marshalled code): Jinja2 itself recompiles a
changed template. The entry's name holds what Jinja2's own key does not: Jinja2's version and the
Environment settings that shape the compiled code, so another Jinja2 or other settings never load it.
Loading marshalled code runs it, so an entry is read only when it is a regular file (not a link) with
one name, owned by the current user and writable by nobody else, in a directory that is the user's own
and writable by nobody else; anything else is ignored (the template is compiled, the same text comes out).
"""

from __future__ import annotations

import functools
import os
from hashlib import sha1  # jinja2 has loaded hashlib already

import jinja2
from jinja2.bccache import Bucket

from slurm_gpu.submit.private_files import private_dir, read_private, write_private

__all__ = ["PrivateBytecodeCache", "bytecode_cache", "entry_prefix"]

# The Environment settings that shape compiled code (Jinja2's own key is the template's name and file,
# its checksum the template's source).
_COMPILE_SETTINGS = ("block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
                     "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix",
                     "trim_blocks", "lstrip_blocks", "newline_sequence", "keep_trailing_newline", "autoescape",
                     "optimized")


def entry_prefix() -> str:
    """The start of every entry's file name: the Jinja2 that compiled it."""
    return f"jinja2-{jinja2.__version__}-"


def settings_digest(environment: jinja2.Environment) -> str:
    """A digest of the settings of ``environment`` that shape its compiled code (extensions included)."""
    settings = [getattr(environment, name) for name in _COMPILE_SETTINGS] + [sorted(environment.extensions)]
    return sha1(repr(settings).encode()).hexdigest()[:12]


class PrivateBytecodeCache(jinja2.BytecodeCache):
    """Jinja2's bytecode cache in one private directory (created mode 0700 when missing)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.usable = private_dir(directory)

    def entry(self, bucket: Bucket) -> str:
        """The file that holds ``bucket``: keyed by Jinja2's version, the settings and Jinja2's own key."""
        name = f"{entry_prefix()}{settings_digest(bucket.environment)}-{bucket.key}.bin"
        return os.path.join(self.directory, name)

    def load_bytecode(self, bucket: Bucket) -> None:
        data = read_private(self.entry(bucket)) if self.usable else None
        if data:
            bucket.bytecode_from_string(data)  # a stale or foreign-format entry leaves the bucket empty

    def dump_bytecode(self, bucket: Bucket) -> None:
        if self.usable:
            write_private(self.entry(bucket), bucket.bytecode_to_string())


@functools.lru_cache(maxsize=4)
def bytecode_cache(directory: str) -> PrivateBytecodeCache:
    """One cache object per directory and process (the renderer keeps one Environment per cache)."""
    return PrivateBytecodeCache(directory)
