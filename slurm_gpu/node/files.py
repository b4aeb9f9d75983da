# SPDX-License-Identifier: Apache-2.0
"""Files the node hooks write as root, written so that no user can redirect them.

``open_dir`` walks a directory path from ``/`` one component at a time with ``O_NOFOLLOW`` (a symlink
anywhere is refused), checks that each directory is owned by root (or us) and not writable by others
(a sticky world-writable directory such as /tmp may be passed through, but nothing is created in it),
and creates missing directories with the given mode. Files are then opened relative to that directory
descriptor with ``O_NOFOLLOW`` (created with ``O_EXCL`` for temporary files) and replaced by
``rename``, which replaces a planted symlink instead of following it.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import time

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # slurmd gives hooks no PATH
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Untrusted(OSError):
    """A path a user could redirect or write: refused."""


def _check(st: os.stat_result, what: str, euid: int) -> None:
    if st.st_uid not in (0, euid):
        raise Untrusted(errno.EPERM, f"{what} is owned by uid {st.st_uid}, not root")


def open_dir(path: str, mode: int = 0o755, create: bool = True) -> int:
    """A descriptor of the directory ``path`` (absolute), created (``mode``) when missing; Untrusted
    when a component is a symlink, belongs to another user or is writable by others."""
    if not path.startswith("/"):
        raise Untrusted(errno.EINVAL, f"{path}: not an absolute path")
    euid = os.geteuid()
    parts = [p for p in path.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise Untrusted(errno.EINVAL, f"{path}: '.' or '..' in the path")
    fd = os.open("/", DIR_FLAGS)
    where = ""
    shared = False  # the directory fd points at is writable by others (sticky)
    try:
        for i, name in enumerate(parts):
            where += "/" + name
            last = i == len(parts) - 1
            try:
                nfd = os.open(name, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create or shared:
                    raise Untrusted(errno.ENOENT, f"{where} does not exist"
                                    + (" (not created inside a directory others can write)" if shared else "")
                                    ) from None
                try:
                    os.mkdir(name, mode if last else 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                nfd = os.open(name, DIR_FLAGS, dir_fd=fd)
                if last:
                    os.fchmod(nfd, mode)  # the umask does not decide
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise Untrusted(errno.ELOOP, f"{where} is a symlink or not a directory; refused") from None
                raise
            os.close(fd)
            fd = nfd
            st = os.fstat(fd)
            _check(st, where, euid)
            writable = bool(st.st_mode & (stat.S_IWGRP | stat.S_IWOTH))
            if writable and (last or not st.st_mode & stat.S_ISVTX):
                raise Untrusted(errno.EPERM, f"{where} is writable by other users; refused")
            shared = writable
        return fd
    except BaseException:
        os.close(fd)
        raise


def write_atomic(dir_fd: int, name: str, data: bytes, mode: int, sync: bool = False) -> None:
    """``name`` in the directory replaced by ``data`` (temporary file, then rename)."""
    tmp = f".{name}.tmp.{os.getpid()}"
    try:
        os.unlink(tmp, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    try:
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def read_small(dir_fd: int, name: str, limit: int = 1 << 20) -> bytes | None:
    """A regular file of ours in the directory, at most ``limit`` bytes; None when it does not exist."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Untrusted(errno.ELOOP, f"{name} is a symlink; refused") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Untrusted(errno.EPERM, f"{name} is not a regular file; refused")
        _check(st, name, os.geteuid())
        if st.st_size > limit:
            raise Untrusted(errno.EFBIG, f"{name} is larger than {limit} bytes; refused")
        return os.read(fd, limit + 1)[:limit]
    finally:
        os.close(fd)


def remove(dir_fd: int, name: str) -> bool:
    """Unlink ``name`` (a symlink planted there is removed, never followed). True when something went."""
    try:
        os.unlink(name, dir_fd=dir_fd)
        return True
    except FileNotFoundError:
        return False


def append_line(path: str, line: str, mode: int = 0o644) -> None:
    """Append one line (one write) to a regular file of ours; the directory must be trusted."""
    parent, name = os.path.split(path)
    dfd = open_dir(parent or "/", 0o755)
    try:
        fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     mode, dir_fd=dfd)
    except OSError as exc:
        os.close(dfd)
        if exc.errno == errno.ELOOP:
            raise Untrusted(errno.ELOOP, f"{path} is a symlink; refused") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Untrusted(errno.EPERM, f"{path} is not a regular file; refused")
        _check(st, path, os.geteuid())
        data = line.encode("utf-8", "replace")
        if os.write(fd, data) != len(data):
            raise OSError(errno.ENOSPC, f"{path}: short write")
    finally:
        os.close(fd)
        os.close(dfd)


class Log:
    """Lines to the log file (appended, 0640, never through a symlink) and to stderr."""

    def __init__(self, prog: str, path: str) -> None:
        self.prog, self.fd, self.problem = prog, None, ""
        if path:
            try:
                parent, name = os.path.split(path)
                dfd = open_dir(parent or "/", 0o755)
                try:
                    self.fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
                                      | os.O_CLOEXEC, 0o640, dir_fd=dfd)
                finally:
                    os.close(dfd)
                if not stat.S_ISREG(os.fstat(self.fd).st_mode):
                    os.close(self.fd)
                    self.fd = None
                    raise Untrusted(1, "not a regular file")
            except OSError as exc:
                self.problem = f"log {path}: {exc.strerror or exc}; logging to stderr only"

    def __call__(self, text: str) -> None:
        line = f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {self.prog}[{os.getpid()}]: {text}\n"
        if self.fd is not None:
            try:
                os.write(self.fd, line.encode("utf-8", "replace"))
            except OSError:
                pass
        try:
            sys.stderr.write(line)
            sys.stderr.flush()
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
