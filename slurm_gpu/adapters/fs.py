# SPDX-License-Identifier: Apache-2.0
"""The one file-safety adapter: every file slurm-gpu writes, and every small file it reads where a user
could have put something else, goes through here (tests/adapters/test_fs_call_sites.py holds the rest to it).

- :func:`open_dir` walks a directory path from ``/`` one component at a time, each opened relative to
  its parent's descriptor with ``O_NOFOLLOW|O_DIRECTORY``: nothing is looked up by path twice, and a
  component swapped for a symlink between two steps fails to open. A symlink is followed only when
  nobody but root or the caller could have made it (owned by root or the caller, in a directory that
  only root or the caller can write: ``/var/run`` -> ``/run``); any other is refused. ``..`` is refused.
  The owner rule (``trust``):

  - :data:`STRICT` (the default): every component is root's or the caller's and writable by nobody
    else. A sticky directory that others can write (``/tmp``) may be passed through, but root creates
    nothing directly in it (a name there can be claimed by any user first); another caller may, and
    what it made (or found there) must then be its own, as every component.
  - :data:`LINKS`: any owner (root or SlurmUser reading a user's directory); only the symlink rule holds.
  - :data:`CALLER`: the caller's own path, resolved as the kernel does (for a process that has no more
    rights than its user, following a link is no escalation). Run by root it is :data:`STRICT`.

  ``follow_last=False``: the last component may not be a symlink at all.

  Missing directories are created (``create``) with ``mode`` (the umask does not decide).
- :func:`write_atomic` replaces a file relative to a directory descriptor: a new temporary file with a
  random name (``O_CREAT|O_EXCL|O_NOFOLLOW``), a write loop, ``fchmod``, optionally ``fsync``, then
  ``renameat`` over the name, which replaces a planted symlink instead of following it; the temporary
  file is unlinked on any failure. Run by root, it refuses a directory that a non-root user owns or can
  write (:class:`Untrusted`): root writes nothing where a user can create names.
- :func:`read_capped` reads a small file without blocking (``O_NONBLOCK``; a FIFO or device is refused
  by ``S_ISREG`` before anything is read) and never more than ``limit`` bytes.
- :class:`Log` appends lines to a log file of the caller's, :func:`append_line` one line to a file.

Only ``os``, ``stat``, ``errno``, ``sys`` and ``time`` are imported: the node hooks and gpusub start with it.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import time

STRICT = "strict"
LINKS = "links"
CALLER = "caller"
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
MAX_LINKS = 8
MAX_PATH = 4096
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
_UP = "\x00up"  # a '..' of a trusted link's target


class Untrusted(OSError):
    """A path, directory or file that a user could redirect or write, or that is not what it must be
    (a symlink, not a regular file, too large): refused. ``strerror`` is one line naming it and why."""


def _owner_problem(st: os.stat_result, euid: int) -> str:
    """Why a directory is not root's or the caller's alone ("" when it is)."""
    if st.st_uid not in (0, euid):
        return f"is owned by uid {st.st_uid}, not {_whose(euid)}"
    if st.st_mode & _OTHERS_WRITE:
        return "is writable by other users"
    return ""


def _whose(euid: int) -> str:
    return "root" if euid == 0 else f"root or uid {euid}"


def _trusted_link(link: os.stat_result, parent: os.stat_result, euid: int) -> bool:
    return link.st_uid in (0, euid) and parent.st_uid in (0, euid) and not parent.st_mode & _OTHERS_WRITE


def _shared(st: os.stat_result) -> bool:
    return bool(st.st_mode & _OTHERS_WRITE)


def _parts(path: str) -> list[str]:
    if not path.startswith("/") or len(path) > MAX_PATH or "\0" in path:
        raise Untrusted(errno.EINVAL, f"{path[:80]!r}: not an absolute path")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise Untrusted(errno.EINVAL, f"{path}: '..' in the path (not followed)")
    return parts


def open_dir(path: str, *, create: bool = False, mode: int = 0o755, trust: str = STRICT,
             uid: int | None = None, follow_last: bool = True) -> int:
    """A descriptor (``O_RDONLY``; the caller closes it) of the directory ``path`` under the owner rule
    ``trust`` (see the module doc). ``create``: missing directories are made, the last with ``mode``,
    those above it 0755. ``uid``: the last component must be owned by that user. ``follow_last`` False:
    the last component may not be a symlink, not even a trusted one. FileNotFoundError when
    a component is missing and not created; Untrusted when one cannot be trusted; other OSErrors
    (EACCES) as they come."""
    euid = os.geteuid()
    if trust == CALLER and euid != 0:
        return _open_callers(path, create, mode, uid, follow_last)
    strict = trust != LINKS
    todo = _parts(path)
    stack = [os.open("/", DIR_FLAGS)]  # the descriptors walked through; a trusted link's '..' pops one
    walked: list[str] = []
    links = 0
    try:
        while todo:
            name = todo.pop(0)
            if name == _UP:
                if len(stack) > 1:
                    os.close(stack.pop())
                    walked.pop()
                continue
            here = "/" + "/".join([*walked, name])
            last = not todo
            made = False
            try:
                st = os.stat(name, dir_fd=stack[-1], follow_symlinks=False)
            except FileNotFoundError:
                if not create:
                    raise FileNotFoundError(errno.ENOENT, f"{here} does not exist") from None
                if euid == 0 and _shared(os.fstat(stack[-1])):
                    raise Untrusted(errno.EPERM, f"{here} does not exist, and root creates nothing in "
                                                 f"{'/' + '/'.join(walked)}, which other users can write") from None
                try:
                    os.mkdir(name, mode if last else 0o755, dir_fd=stack[-1])
                    made = True
                except FileExistsError:
                    pass
                st = os.stat(name, dir_fd=stack[-1], follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                if last and not follow_last:
                    raise Untrusted(errno.ELOOP, f"{here} is a symlink; refused (not followed)")
                if not _trusted_link(st, os.fstat(stack[-1]), euid):
                    raise Untrusted(errno.ELOOP, f"{here} is a symlink that root does not control; refused "
                                                 "(not followed)")
                links += 1
                if links > MAX_LINKS:
                    raise Untrusted(errno.ELOOP, f"{path}: more than {MAX_LINKS} symlinks")
                target = os.readlink(name, dir_fd=stack[-1])
                if target.startswith("/"):
                    while len(stack) > 1:
                        os.close(stack.pop())
                    walked.clear()
                todo[:0] = [_UP if p == ".." else p for p in target.split("/") if p not in ("", ".")]
                continue
            if not stat.S_ISDIR(st.st_mode):
                raise Untrusted(errno.ENOTDIR, f"{here} is not a directory; refused")
            try:
                fd = os.open(name, DIR_FLAGS, dir_fd=stack[-1])
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise Untrusted(exc.errno, f"{here} changed while it was opened; refused (not followed)"
                                    ) from None
                raise
            stack.append(fd)
            walked.append(name)
            if made:
                os.fchmod(fd, mode if last else 0o755)  # the umask does not decide
            st = os.fstat(fd)
            if strict:
                why = _owner_problem(st, euid)
                if why and not (why == "is writable by other users" and st.st_mode & stat.S_ISVTX and todo):
                    raise Untrusted(errno.EPERM, f"{here} {why}; refused")
        if uid is not None:
            _check_uid(os.fstat(stack[-1]), "/" + "/".join(walked), uid)
        return stack.pop()
    finally:
        for fd in stack:
            os.close(fd)


def _check_uid(st: os.stat_result, what: str, uid: int) -> None:
    if st.st_uid != uid:
        raise Untrusted(errno.EPERM, f"{what} is owned by uid {st.st_uid}, not {uid}")


def _open_callers(path: str, create: bool, mode: int, uid: int | None, follow_last: bool) -> int:
    if create:
        os.makedirs(path, mode=mode, exist_ok=True)
    try:
        fd = os.open(path, DIR_FLAGS & ~os.O_NOFOLLOW if follow_last else DIR_FLAGS)
    except OSError as exc:  # O_DIRECTORY|O_NOFOLLOW on a symlink: ENOTDIR or ELOOP
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise Untrusted(exc.errno, f"{path} is a symlink or not a directory; refused") from None
        raise
    if uid is not None:
        try:
            _check_uid(os.fstat(fd), path, uid)
        except BaseException:
            os.close(fd)
            raise
    return fd


def check_dir_fd(dir_fd: int, what: str) -> None:
    """Run by root: Untrusted when the directory is owned or writable by a non-root user."""
    if os.geteuid() == 0:
        why = _owner_problem(os.fstat(dir_fd), 0)
        if why:
            raise Untrusted(errno.EPERM, f"{what} {why}; root writes nothing there (give a directory of "
                                         "root's, or run as its owner)")


def _check_name(name: str) -> None:
    if not name or "/" in name or name in (".", "..") or "\0" in name:
        raise Untrusted(errno.EINVAL, f"{name[:80]!r}: not a file name")


def temp_name(name: str) -> str:
    """The hidden temporary file :func:`write_atomic` renames onto ``name``: ``.NAME.PID.RANDOM.tmp``."""
    return f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"


def write_atomic(where: int | str, name: str, data: bytes, *, mode: int = 0o644, sync: bool = False,
                 mtime: float | None = None, create: bool = False, what: str | None = None) -> str:
    """Replace ``name`` in the directory ``where`` (a descriptor, or a path opened by :func:`open_dir`:
    :data:`CALLER`'s rule, :data:`STRICT` for root; ``create`` makes it 0755) by ``data`` (see the
    module doc). ``sync``: fsync the file and the directory. ``mtime``: the new file's modification time.
    Returns the file's path (``what``, the directory's name, or ``<fd N>``, joined with ``name``)."""
    _check_name(name)
    if isinstance(where, str):
        dfd = open_dir(os.path.abspath(where), create=create, trust=CALLER)
        try:
            return write_atomic(dfd, name, data, mode=mode, sync=sync, mtime=mtime, what=what or where)
        finally:
            os.close(dfd)
    label = what if what is not None else f"<fd {where}>"
    check_dir_fd(where, label)
    for _ in range(100):
        tmp = temp_name(name)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode & 0o777,
                         dir_fd=where)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(errno.EEXIST, f"{label}: no free temporary name")
    try:
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if mtime is not None:
                os.utime(fd, (mtime, mtime))
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=where, dst_dir_fd=where)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=where)
        except OSError:
            pass
        raise
    if sync:
        try:
            os.fsync(where)
        except OSError:
            pass
    return os.path.join(label, name)


def write_file(path: str, data: bytes, *, mode: int = 0o644, sync: bool = False, create: bool = False) -> str:
    """:func:`write_atomic` by the file's path (``create``: its directory is made when missing)."""
    full = os.path.abspath(path)
    parent, name = os.path.split(full)
    return write_atomic(parent or "/", name, data, mode=mode, sync=sync, create=create, what=parent or "/")


def create_private(directory: str, prefix: str, suffix: str, data: bytes) -> str:
    """A new file of the caller's (mode 0600, a random name, ``O_EXCL|O_NOFOLLOW``) holding ``data``;
    its path. The caller removes it. For a temporary file handed to another program (sbatch)."""
    for _ in range(100):
        path = os.path.join(directory, f"{prefix}{os.urandom(6).hex()}{suffix}")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(errno.EEXIST, f"no free temporary name in {directory}")
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
    except BaseException:
        try:
            os.unlink(path)
        except OSError:
            pass
        raise
    return path


def _kind(st: os.stat_result) -> str:
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(st.st_mode):
            return kind
    return "of an unknown type"


def read_capped(where: int | str, name: str | None = None, *, limit: int, missing_ok: bool = False,
                trusted: bool = False, uid: int | None = None, private: bool = False,
                one_link: bool = False, offset: int = 0) -> bytes | None:
    """At most ``limit`` bytes of a regular file: ``name`` relative to the directory descriptor
    ``where`` (never through a symlink), or the path ``where`` (as the kernel resolves it), or, with
    no ``name`` and a descriptor, that open file itself (standard input: only the cap applies).
    Opened without blocking; a FIFO, device or directory is refused before anything is read. None for
    a missing file with ``missing_ok``. Checks, each an :class:`Untrusted`: ``trusted`` (root's or the
    caller's), ``uid`` (that user's), ``private`` (no group/other bits), ``one_link`` (one hard link);
    a file over ``limit`` bytes is Untrusted with errno EFBIG. ``offset``: only the bytes from there on
    (a log's tail: the cap applies to them), nothing when the file is shorter."""
    label = name if name is not None else str(where)
    if isinstance(where, int) and name is None:
        return _read_fd(where, limit, label)
    try:
        if isinstance(where, int):
            assert name is not None
            _check_name(name)
            fd = os.open(name, READ_FLAGS | os.O_NOFOLLOW, dir_fd=where)
        else:
            fd = os.open(where, READ_FLAGS)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Untrusted(errno.ELOOP, f"{label} is a symlink; refused") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Untrusted(errno.EISDIR if stat.S_ISDIR(st.st_mode) else errno.EINVAL,
                            f"{label} is not a regular file ({_kind(st)}); refused")
        if trusted and st.st_uid not in (0, os.geteuid()):
            raise Untrusted(errno.EPERM, f"{label} is owned by uid {st.st_uid}, not {_whose(os.geteuid())}")
        if uid is not None and st.st_uid != uid:
            raise Untrusted(errno.EPERM, f"{label} is owned by uid {st.st_uid}, not {uid}")
        if private and st.st_mode & 0o077:
            raise Untrusted(errno.EPERM, f"{label} has mode {stat.S_IMODE(st.st_mode):o}, not private")
        if one_link and st.st_nlink != 1:
            raise Untrusted(errno.EPERM, f"{label} has {st.st_nlink} hard links, not 1")
        if st.st_size - offset > limit:
            raise Untrusted(errno.EFBIG, f"{label} is larger than {limit} bytes; refused")
        if offset:
            if st.st_size <= offset:
                return b""
            os.lseek(fd, offset, os.SEEK_SET)
        return _read_fd(fd, limit, label)
    finally:
        os.close(fd)


def _read_fd(fd: int, limit: int, label: str) -> bytes:
    chunks, size = [], 0
    while size <= limit:
        chunk = os.read(fd, min(1 << 20, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > limit:
        raise Untrusted(errno.EFBIG, f"{label} is larger than {limit} bytes; refused")
    return b"".join(chunks)


def remove(dir_fd: int, name: str) -> bool:
    """Unlink ``name`` (a symlink planted there is removed, never followed). True when something went."""
    _check_name(name)
    try:
        os.unlink(name, dir_fd=dir_fd)
        return True
    except FileNotFoundError:
        return False


def open_append(path: str, mode: int = 0o644) -> int:
    """A descriptor for appending to ``path`` (made with ``mode`` when missing, its directory too, 0755),
    a regular file of the caller's in a :data:`STRICT` directory, never opened through a symlink."""
    parent, name = os.path.split(os.path.abspath(path))
    dfd = open_dir(parent or "/", create=True, mode=0o755)
    try:
        try:
            fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
                         | os.O_CLOEXEC, mode, dir_fd=dfd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise Untrusted(errno.ELOOP, f"{path} is a symlink; refused") from None
            raise
    finally:
        os.close(dfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Untrusted(errno.EINVAL, f"{path} is not a regular file ({_kind(st)}); refused")
        if st.st_uid != os.geteuid():
            raise Untrusted(errno.EPERM, f"{path} is owned by uid {st.st_uid}, not "
                            + ("root" if os.geteuid() == 0 else f"uid {os.geteuid()}"))
    except BaseException:
        os.close(fd)
        raise
    return fd


def append_line(path: str, line: str, mode: int = 0o644) -> None:
    """Append one line (one write) to a file as :func:`open_append` opens it."""
    fd = open_append(path, mode)
    try:
        data = line.encode("utf-8", "replace")
        if os.write(fd, data) != len(data):
            raise OSError(errno.ENOSPC, f"{path}: short write")
    finally:
        os.close(fd)


class Log:
    """Lines to a log file (appended; made 0640 when missing; only a regular file of ours in a
    :data:`STRICT` directory, never through a symlink) and to stderr. A log that cannot be opened costs
    one line (``problem``), nothing more."""

    def __init__(self, prog: str, path: str | None) -> None:
        self.prog, self.fd, self.problem = prog, None, ""
        if path:
            try:
                self.fd = open_append(path, 0o640)
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


__all__ = ["open_dir", "write_atomic", "write_file", "create_private", "read_capped", "remove", "open_append",
           "append_line", "check_dir_fd", "temp_name", "Log", "Untrusted", "STRICT", "LINKS", "CALLER", "MAX_LINKS"]
