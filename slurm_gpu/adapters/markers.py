# SPDX-License-Identifier: Apache-2.0
"""The checkpoint directory on disk: read markers safely, write one atomically, prune old ones.

Every file operation is relative to a descriptor of the directory, and nothing follows a symlink: the
directory's own last component and every marker are opened with O_NOFOLLOW (a symlinked directory or
marker is refused). A marker counts only when it is a regular file with one link, owned by the
expected user (the current user; the job's user when a controller hook reads as root or SlurmUser), at
most 64 KiB, opened without blocking (a FIFO cannot hang the reader), and valid by
:func:`slurm_gpu.checkpoint.markers.parse_marker`. Anything else is skipped with one warning line and
never crashes the reader. Writing: a temporary file in the same directory, fsync, rename over the
marker's name, fsync of the directory. The directory, the reads and the writes are
slurm_gpu/adapters/fs.py's (open_dir, read_capped, write_atomic).
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from slurm_gpu.adapters import fs
from slurm_gpu.checkpoint.markers import (
    MAX_MARKER_BYTES,
    STALE_TEMP_S,
    Marker,
    MarkerError,
    is_temp_name,
    parse_marker,
    parse_name,
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


@contextmanager
def open_dir(path: str | int, create: bool = False, expected_uid: int | None = None,
             trust: str = fs.CALLER) -> Iterator[int]:
    """A descriptor of the marker directory (slurm_gpu/adapters/fs.py open_dir: its last component may
    not be a symlink; run by root, ``trust`` decides). ``create``: make it (and its parents) first. When
    ``expected_uid`` is another user than ours, the directory must be owned by that user. A descriptor
    given as ``path`` is used as it is (the caller walked to it and checked it)."""
    if isinstance(path, int):
        yield path
        return
    uid = expected_uid if expected_uid is not None and expected_uid != os.geteuid() else None
    fd = fs.open_dir(path, create=create, trust=trust, uid=uid, follow_last=False)
    try:
        yield fd
    finally:
        os.close(fd)


def _why(exc: OSError, name: str) -> str:
    """fs's reason without the file's name: "not a regular file (a FIFO)", "owned by uid 0, not 1001"."""
    why = str(exc.strerror or exc).removeprefix(name + " ").removeprefix("is ").removesuffix("; refused")
    return "a symlink (never followed)" if exc.errno == errno.ELOOP else why


def read_markers(path: str | int, expected_uid: int | None = None, warn: Warn = warn_stderr) -> Listing:
    """The markers of a directory (a path, or a descriptor the caller opened: ``.`` in the warnings).
    A missing directory is empty; an unreadable one is a warning and empty. Root reads a user's
    directory without following the user's symlinks (fs.LINKS)."""
    uid = os.geteuid() if expected_uid is None else expected_uid
    label = "." if isinstance(path, int) else path
    try:
        with open_dir(path, expected_uid=expected_uid, trust=fs.LINKS if os.geteuid() == 0 else fs.CALLER) as dfd:
            return _scan(dfd, label, uid, warn)
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
                try:  # a regular file of the user's with one link, at most MAX_MARKER_BYTES, never blocking
                    raw = fs.read_capped(dfd, entry.name, limit=MAX_MARKER_BYTES, uid=uid, one_link=True)
                except fs.Untrusted as exc:
                    if exc.errno == errno.EFBIG:  # checked last: the file is the user's
                        owned.append((entry.name, parsed[0]))
                    raise MarkerError(_why(exc, entry.name)) from None
                assert raw is not None
                owned.append((entry.name, parsed[0]))  # ours: pruning may delete it, valid or not
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
    with open_dir(path, create=True) as dfd:
        fs.write_atomic(dfd, marker.name, data, mode=0o644, sync=True, what=path)  # temp_name's form
    return os.path.join(path, marker.name)


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
                    if fs.remove(dfd, name):
                        done.append(name)
                except OSError as exc:
                    warn(f"could not prune {os.path.join(path, name)}: {exc.strerror or exc}")
            if done:
                os.fsync(dfd)
    except OSError as exc:
        warn(f"could not prune markers in {path}: {exc.strerror or exc}")
    return done
