# SPDX-License-Identifier: Apache-2.0
"""The checkpoint directory on disk: read markers safely, write one atomically, prune old ones.

Every file operation is relative to a descriptor of the directory, and nothing follows a symlink: the
directory's own last component and every marker are opened with O_NOFOLLOW (a symlinked directory or
marker is refused). A marker counts only when it is a regular file with one link, owned by the
expected user (the current user; the job's user when a controller hook reads as root or SlurmUser), at
most 64 KiB, opened without blocking (a FIFO cannot hang the reader), and valid by
:func:`slurm_gpu.checkpoint.markers.parse_marker`. Anything else is skipped with one warning line and
never crashes the reader. Writing: a temporary file in the same directory, fsync, rename over the
marker's name, fsync of the directory.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from slurm_gpu.checkpoint.markers import (
    MAX_MARKER_BYTES,
    STALE_TEMP_S,
    Marker,
    MarkerError,
    is_temp_name,
    parse_marker,
    parse_name,
    temp_name,
    to_json,
)
from slurm_gpu.plain import Record, record

MAX_ENTRIES = 100_000  # directory entries looked at; a directory bigger than this is not a marker directory
Warn = Callable[[str], None]


def warn_stderr(text: str) -> None:
    try:
        sys.stderr.write(f"gpusub-ckpt: warning: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


@record
class Listing(Record):
    """What a directory holds: the valid markers, and (name, step) of every marker file the expected
    user owns (valid or not: what pruning may delete)."""

    markers: tuple[Marker, ...] = ()
    owned: tuple[tuple[str, int], ...] = ()
    stale: tuple[str, ...] = ()  # temporary files of killed writers (the user's, over an hour old)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@contextmanager
def open_dir(path: str, create: bool = False, expected_uid: int | None = None) -> Iterator[int]:
    """A descriptor of the marker directory (its last component may not be a symlink). ``create``: make
    it (and its parents) first, mode 0755 less the umask. When ``expected_uid`` is another user than
    ours, the directory must be owned by that user."""
    if create:
        os.makedirs(path, mode=0o755, exist_ok=True)
    try:
        fd = os.open(path, _DIR_FLAGS)
    except OSError as exc:  # O_DIRECTORY|O_NOFOLLOW on a symlink: ENOTDIR or ELOOP
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and stat.S_ISLNK(os.lstat(path).st_mode):
            raise OSError(errno.ELOOP, f"{path} is a symlink; the checkpoint directory must be a directory") from None
        raise
    try:
        st = os.fstat(fd)
        if expected_uid is not None and expected_uid != os.geteuid() and st.st_uid != expected_uid:
            raise PermissionError(errno.EPERM, f"{path} is owned by uid {st.st_uid}, not {expected_uid}")
        yield fd
    finally:
        os.close(fd)


def _open_ours(dir_fd: int, name: str, uid: int) -> int:
    """A descriptor of the marker file when it is a regular file of ``uid`` with one link (never through a
    symlink, never blocking); MarkerError or OSError saying why it does not count."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise MarkerError("a symlink (never followed)") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise MarkerError("not a regular file")
        if st.st_uid != uid:
            raise MarkerError(f"owned by uid {st.st_uid}, not {uid}")
        if st.st_nlink != 1:
            raise MarkerError(f"has {st.st_nlink} hard links, not 1")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_capped(fd: int) -> bytes:
    """At most MAX_MARKER_BYTES + 1 bytes (one more than a marker may have: parse_marker refuses it)."""
    chunks, size = [], 0
    while size <= MAX_MARKER_BYTES:
        chunk = os.read(fd, MAX_MARKER_BYTES + 1 - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_markers(path: str, expected_uid: int | None = None, warn: Warn = warn_stderr) -> Listing:
    """The markers of a directory. A missing directory is empty; an unreadable one is a warning and empty."""
    uid = os.geteuid() if expected_uid is None else expected_uid
    try:
        with open_dir(path, expected_uid=expected_uid) as dfd:
            return _scan(dfd, path, uid, warn)
    except FileNotFoundError:
        return Listing()
    except OSError as exc:
        warn(f"checkpoint directory {path}: {exc.strerror or exc}; no markers read")
        return Listing()


def _scan(dfd: int, path: str, uid: int, warn: Warn) -> Listing:
    markers: list[Marker] = []
    owned: list[tuple[str, int]] = []
    stale: list[str] = []
    now = time.time()
    with os.scandir(dfd) as entries:
        for seen, entry in enumerate(entries):
            if seen >= MAX_ENTRIES:
                warn(f"{path}: more than {MAX_ENTRIES} entries; the rest are not read")
                break
            parsed = parse_name(entry.name)
            if parsed is None:
                if is_temp_name(entry.name) and _stale(entry, uid, now):
                    stale.append(entry.name)
                continue
            try:
                fd = _open_ours(dfd, entry.name, uid)
                owned.append((entry.name, parsed[0]))  # ours: pruning may delete it, valid or not
                try:
                    raw = _read_capped(fd)
                finally:
                    os.close(fd)
                markers.append(parse_marker(raw, entry.name))
            except MarkerError as exc:
                warn(f"marker {os.path.join(path, entry.name)} ignored: {exc}")
            except OSError as exc:
                warn(f"marker {os.path.join(path, entry.name)} ignored: {exc.strerror or exc}")
    return Listing(tuple(markers), tuple(owned), tuple(stale))


def _stale(entry: os.DirEntry[str], uid: int, now: float) -> bool:
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == uid and st.st_mtime < now - STALE_TEMP_S


def write_marker(path: str, marker: Marker) -> str:
    """Write the marker atomically into the directory (made when missing); returns the file's path."""
    data = to_json(marker)
    name = marker.name
    tmp = temp_name(name, os.getpid(), os.urandom(4).hex())
    with open_dir(path, create=True) as dfd:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dfd)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
            raise
        os.fsync(dfd)
    return os.path.join(path, name)


def remove_markers(path: str, names: list[str], warn: Warn = warn_stderr) -> list[str]:
    """Delete these marker files (names from a Listing's ``owned`` or ``stale``); returns those deleted.
    A file already gone (another rank pruned it) is not an error; anything else is a warning."""
    done: list[str] = []
    if not names:
        return done
    try:
        with open_dir(path) as dfd:
            for name in names:
                if parse_name(name) is None and not is_temp_name(name):  # only ever marker files
                    continue
                try:
                    os.unlink(name, dir_fd=dfd)
                    done.append(name)
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    warn(f"could not prune {os.path.join(path, name)}: {exc.strerror or exc}")
            if done:
                os.fsync(dfd)
    except OSError as exc:
        warn(f"could not prune markers in {path}: {exc.strerror or exc}")
    return done
