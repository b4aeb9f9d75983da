# SPDX-License-Identifier: Apache-2.0
"""The one per-user (or per-node, for root) cache: one set of rules for every cache slurm-gpu keeps.

- Where: :func:`user_cache_dir` (``$XDG_CACHE_HOME/slurm-gpu``, else ``$HOME/.cache/slurm-gpu``; none
  without an absolute one), or a directory the caller names (the hooks' ``state_dir/policy-cache``).
- The directory: opened by :func:`slurm_gpu.adapters.fs.open_dir` (walked from ``/``, no symlink but
  root's or the user's own followed, every component root's or the user's and writable by nobody
  else), owned by the user, created 0700; a directory of the user's with a wider mode is narrowed to
  0700 when an entry is written.
- An entry: a regular file owned by the user, mode 0600, one hard link, at most ``limit`` bytes, read
  without blocking and written by :func:`slurm_gpu.adapters.fs.write_atomic`. Its first line is
  ``slurm-gpu-cache FORMAT VERSION KEY``: the cache's format, this package's version and the caller's
  key, which names everything the data depends on (files by path, size and mtime; the tool's version).
  An entry whose line differs is a miss. Data is bytes (callers store JSON or text: nothing that runs
  code when read).
- Any problem (no home, a foreign or impossible directory, a corrupt, foreign or stale entry, a full
  disk) is a miss or an unwritten entry, never an error: the caller computes the answer again.
"""

from __future__ import annotations

import os
import stat
import zlib

from slurm_gpu import __version__
from slurm_gpu.adapters import fs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

FORMAT = 1
DEFAULT_LIMIT = 4 << 20
_MAGIC = b"slurm-gpu-cache"


def user_cache_dir(env: Mapping[str, str] | None = None) -> str | None:
    """``$XDG_CACHE_HOME/slurm-gpu``, else ``$HOME/.cache/slurm-gpu``; None without an absolute one."""
    env = os.environ if env is None else env
    xdg = env.get("XDG_CACHE_HOME") or ""
    if xdg.startswith("/"):
        return os.path.join(xdg, "slurm-gpu")
    home = env.get("HOME") or ""
    return os.path.join(home, ".cache", "slurm-gpu") if home.startswith("/") else None


def entry_name(prefix: str, *parts: str) -> str:
    """A file name for an entry: ``prefix`` (letters, digits, ``-_.``) and a crc32 of ``parts``."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in prefix)[:80].lstrip(".")
    return f"{safe or 'entry'}-{zlib.crc32(chr(0).join(parts).encode('utf-8', 'surrogateescape')):08x}"


def file_stamps(paths: Iterable[str]) -> list[list[object]] | None:
    """[path, mtime_ns, size] of each file, for a key or an entry to check; None when one is missing."""
    out: list[list[object]] = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            return None
        out.append([p, st.st_mtime_ns, st.st_size])
    return out


def _line(key: str) -> bytes:
    k = key.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return b" ".join((_MAGIC, str(FORMAT).encode(), __version__.encode(), k.encode("utf-8", "surrogateescape")))


class Cache:
    """Entries in one directory (see the module doc). ``directory`` None: every get misses, no put writes."""

    def __init__(self, directory: str | None, limit: int = DEFAULT_LIMIT) -> None:
        self.directory = os.path.abspath(directory) if directory else None
        self.limit = limit

    def _open(self, create: bool) -> int:
        assert self.directory is not None
        return fs.open_dir(self.directory, create=create, mode=0o700, uid=os.geteuid())

    def get(self, name: str, key: str) -> bytes | None:
        """The data stored under ``name`` with this ``key``; None on a miss (or any problem)."""
        if self.directory is None:
            return None
        try:
            dfd = self._open(create=False)
            try:
                raw = fs.read_capped(dfd, name, limit=self.limit, missing_ok=True, uid=os.geteuid(),
                                     private=True, one_link=True)
            finally:
                os.close(dfd)
        except (OSError, ValueError):
            return None
        if raw is None:
            return None
        line, nl, data = raw.partition(b"\n")
        return data if nl and line == _line(key) else None

    def put(self, name: str, key: str, data: bytes) -> bool:
        """Store ``data`` under ``name`` with ``key`` (replacing what was there); False when it could not."""
        if self.directory is None:
            return False
        try:
            dfd = self._open(create=True)
            try:
                if stat.S_IMODE(os.fstat(dfd).st_mode) != 0o700:
                    os.fchmod(dfd, 0o700)
                fs.write_atomic(dfd, name, _line(key) + b"\n" + data, mode=0o600, what=self.directory)
            finally:
                os.close(dfd)
        except (OSError, ValueError):
            return False
        return True


def user_cache(env: Mapping[str, str] | None = None, limit: int = DEFAULT_LIMIT) -> Cache:
    """The user's cache (:func:`user_cache_dir`)."""
    return Cache(user_cache_dir(env), limit)


__all__ = ["Cache", "user_cache", "user_cache_dir", "entry_name", "file_stamps", "FORMAT"]
