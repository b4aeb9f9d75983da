# SPDX-License-Identifier: Apache-2.0
"""The one place the policy loader touches the filesystem: read a policy file, safely.

Only regular files are read (a FIFO, a device such as /dev/zero or a directory is refused without
blocking: the file is opened with O_NONBLOCK and checked with fstat), at most MAX_BYTES of them, and
the text must be UTF-8. Errors are one line and never quote the file's content.
"""

from __future__ import annotations

import os
import stat

MAX_BYTES = 1024 * 1024  # a policy with every site's classes is a few tens of KB
_KINDS = ((stat.S_ISDIR, "is a directory"), (stat.S_ISFIFO, "is a FIFO, not a regular file"),
          (stat.S_ISCHR, "is a character device, not a regular file"),
          (stat.S_ISBLK, "is a block device, not a regular file"), (stat.S_ISSOCK, "is a socket, not a regular file"))


class ReadError(Exception):
    """Why a file cannot be read; ``where`` is (line, col) for an encoding error, else None."""

    def __init__(self, reason: str, where: tuple[int, int] | None = None):
        super().__init__(reason)
        self.reason, self.where = reason, where


def real_path(path: str) -> str:
    """The file's canonical name (symlinks resolved on disk): how includes are told apart."""
    return os.path.realpath(path)


def absolute_path(path: str) -> str:
    """``path`` joined to the working directory (symlinks kept)."""
    return os.path.abspath(path)


def read_policy_text(path: str, limit: int = MAX_BYTES) -> str:
    """The file's text. Raises ReadError("is a directory", "no such file or directory", ...)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ReadError((exc.strerror or type(exc).__name__).lower()) from None
    try:
        st = os.fstat(fd)
        for test, reason in _KINDS:
            if test(st.st_mode):
                raise ReadError(reason)
        if not stat.S_ISREG(st.st_mode):
            raise ReadError("is not a regular file")
        if st.st_size > limit:
            raise ReadError(f"is {st.st_size} bytes, over the limit of {limit} bytes")
        chunks, size = [], 0
        while size <= limit:  # st_size can lie (/proc) or the file can grow: count what is read
            chunk = os.read(fd, min(65536, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise ReadError(f"is over the limit of {limit} bytes")
    except OSError as exc:
        raise ReadError((exc.strerror or type(exc).__name__).lower()) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ReadError(f"byte 0x{data[exc.start]:02x} at byte offset {exc.start} that is not UTF-8",
                        (line, col)) from None
