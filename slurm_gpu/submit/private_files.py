# SPDX-License-Identifier: Apache-2.0
"""Files only their owner may have written: read one safely, write one atomically (filesystem adapter).

gpusub's caches hold code it runs (compiled templates), so an entry is used only when it is a regular
file (not a link) with one name, owned by the current user and writable by nobody else, in a directory
that is the user's own and writable by nobody else. Anything else is ignored: the cache is rebuilt.
"""

from __future__ import annotations

import os
import stat

MAX_ENTRY = 1024 * 1024


def private(st: os.stat_result) -> bool:
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def private_dir(directory: str) -> bool:
    """``directory`` exists (created mode 0700 when missing) and is the user's own, private."""
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        st = os.lstat(directory)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and private(st)


def read_private(path: str, limit: int = MAX_ENTRY) -> bytes | None:
    """The bytes of ``path`` when it is the user's own private regular file; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or not private(st) or st.st_size > limit:
            return None
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read(limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def write_private(path: str, data: bytes) -> bool:
    """Write ``data`` to ``path`` (mode 0600) through a new temporary file and a rename. False when
    the disk says no (a full or read-only disk just means no cache)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
        return True
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
