# SPDX-License-Identifier: Apache-2.0
"""gpusub's compiled templates, kept per user: a ``jinja2.BytecodeCache`` in the one per-user cache
(:mod:`slurm_gpu.adapters.cache`; filesystem adapter).

This is Jinja2's documented extension point for caching compiled templates (a subclass that loads and
dumps a ``jinja2.bccache.Bucket``). Parsing and compiling the four templates costs about 14 ms of CPU,
every run; loading them compiled about 1.5 ms. An entry holds Jinja2's own bucket (its format magic with
Python's version, the template source's checksum, the marshalled code): Jinja2 itself recompiles a
changed template. The entry's key holds what Jinja2's own key does not: Jinja2's version and the
Environment settings that shape the compiled code, so another Jinja2 or other settings never load it.
Loading marshalled code runs it; the cache's rules (the user's own private directory and entries,
:mod:`slurm_gpu.adapters.cache`) are what make that safe, and anything else is a miss (the template is
compiled, the same text comes out).
"""

from __future__ import annotations

import functools
from hashlib import sha1  # jinja2 has loaded hashlib already

import jinja2
from jinja2.bccache import Bucket

from slurm_gpu.adapters.cache import Cache, entry_name

__all__ = ["PrivateBytecodeCache", "bytecode_cache", "entry_key", "ENTRY_PREFIX"]

ENTRY_PREFIX = "jinja2-template"
MAX_ENTRY = 1 << 20

# The Environment settings that shape compiled code (Jinja2's own key is the template's name and file,
# its checksum the template's source).
_COMPILE_SETTINGS = ("block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
                     "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix",
                     "trim_blocks", "lstrip_blocks", "newline_sequence", "keep_trailing_newline", "autoescape",
                     "optimized")


def settings_digest(environment: jinja2.Environment) -> str:
    """A digest of the settings of ``environment`` that shape its compiled code (extensions included)."""
    settings = [getattr(environment, name) for name in _COMPILE_SETTINGS] + [sorted(environment.extensions)]
    return sha1(repr(settings).encode()).hexdigest()[:12]


def entry_key(bucket: Bucket) -> str:
    """Everything an entry depends on besides the source (Jinja2 checks that): Jinja2's version, the
    settings and Jinja2's own key of the template (its name and file)."""
    return f"jinja2={jinja2.__version__} settings={settings_digest(bucket.environment)} template={bucket.key}"


class PrivateBytecodeCache(jinja2.BytecodeCache):
    """Jinja2's bytecode cache in ``directory`` under the per-user cache's rules (None: no cache)."""

    def __init__(self, directory: str | None) -> None:
        self.cache = Cache(directory, MAX_ENTRY)

    @staticmethod
    def entry(bucket: Bucket) -> str:
        """The entry's file name: one per template and settings (the key in its first line says the rest)."""
        return entry_name(ENTRY_PREFIX, bucket.key, settings_digest(bucket.environment)) + ".bin"

    def load_bytecode(self, bucket: Bucket) -> None:
        data = self.cache.get(self.entry(bucket), entry_key(bucket))
        if data:
            bucket.bytecode_from_string(data)  # a stale or foreign-format bucket leaves it empty

    def dump_bytecode(self, bucket: Bucket) -> None:
        self.cache.put(self.entry(bucket), entry_key(bucket), bucket.bytecode_to_string())


@functools.lru_cache(maxsize=4)
def bytecode_cache(directory: str | None) -> PrivateBytecodeCache:
    """One cache object per directory and process (the renderer keeps one Environment per cache)."""
    return PrivateBytecodeCache(directory)
