# SPDX-License-Identifier: Apache-2.0
"""The one place the policy loader touches the filesystem: read a policy file, safely.

Only regular files are read (a FIFO, a device such as /dev/zero or a directory is refused without
blocking: the file is opened with O_NONBLOCK and checked with fstat), at most MAX_BYTES of them, and
the text must be UTF-8. Errors are one line and never quote the file's content.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping

from slurm_gpu.errors import UsageError

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


DEFAULT_POLICY_PATH = "/etc/slurm-gpu/policy.yaml"


def policy_path(explicit: str | None, env: Mapping[str, str]) -> str | None:
    """The policy a command uses: ``explicit`` (its --policy), then $GPUSUB_POLICY, then
    /etc/slurm-gpu/policy.yaml; None when no policy applies. A named file that does not exist is a
    usage error (one line)."""
    if explicit:
        if not os.path.lexists(explicit):
            raise UsageError(f"--policy {explicit}: no such file (give a site policy YAML file)")
        return explicit  # a directory, FIFO or device: the policy reader says which, in one line
    from_env = env.get("GPUSUB_POLICY")
    if from_env:
        if not os.path.lexists(from_env):
            raise UsageError(f"GPUSUB_POLICY={from_env}: no such file (unset it or point it at a policy YAML file)")
        return from_env
    return DEFAULT_POLICY_PATH if os.path.isfile(DEFAULT_POLICY_PATH) else None
