# SPDX-License-Identifier: Apache-2.0
"""Open a directory that users control, as root or SlurmUser, without following their symlinks.

The path is walked from ``/`` one component at a time, each opened relative to its parent's descriptor
with ``O_NOFOLLOW|O_DIRECTORY``: a component that is replaced by a symlink between two steps fails to
open, and nothing is looked up by path twice. A symlink is followed only when root controls it: the
link is owned by root and sits in a root-owned directory that group and others cannot write (``/home``
-> ``/mnt/home`` on some systems). Any other symlink, a ``..``, a non-directory or too many links is a
:class:`UntrustedPath` error with one line saying which component and why.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_LINKS = 8
MAX_PATH = 4096


class UntrustedPath(OSError):
    """The path cannot be opened safely (the message names the component)."""


def _trusted_link(link: os.stat_result, parent: os.stat_result) -> bool:
    return link.st_uid == 0 and parent.st_uid == 0 and not parent.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def open_dir(path: str) -> int:
    """A descriptor (O_RDONLY, close it) of the directory ``path``. FileNotFoundError when a component
    is missing; UntrustedPath when one cannot be trusted; other OSErrors (EACCES) as they come."""
    if not path.startswith("/") or len(path) > MAX_PATH or "\0" in path:
        raise UntrustedPath(errno.EINVAL, f"{path[:80]!r} is not an absolute path")
    todo = deque(p for p in path.split("/") if p not in ("", "."))
    stack = [os.open("/", _DIR)]  # the descriptors walked through; ".." of a trusted link pops one
    walked: list[str] = []
    links = 0
    try:
        while todo:
            name = todo.popleft()
            if name == "..":
                raise UntrustedPath(errno.EINVAL, f"{path}: '..' is not followed")
            here = "/" + "/".join([*walked, name])
            st = os.stat(name, dir_fd=stack[-1], follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                if not _trusted_link(st, os.fstat(stack[-1])):
                    raise UntrustedPath(errno.ELOOP, f"{here} is a symlink that root does not control (not followed)")
                links += 1
                if links > MAX_LINKS:
                    raise UntrustedPath(errno.ELOOP, f"{path}: more than {MAX_LINKS} symlinks")
                target = os.readlink(name, dir_fd=stack[-1])
                parts = [p for p in target.split("/") if p not in ("", ".")]
                if target.startswith("/"):
                    while len(stack) > 1:
                        os.close(stack.pop())
                    walked.clear()
                for part in reversed(parts):
                    if part == "..":  # only a root-controlled link's target gets here
                        todo.appendleft("\x00up")
                    else:
                        todo.appendleft(part)
                _pop_ups(todo, stack, walked)
                continue
            if not stat.S_ISDIR(st.st_mode):
                raise UntrustedPath(errno.ENOTDIR, f"{here} is not a directory")
            try:
                stack.append(os.open(name, _DIR, dir_fd=stack[-1]))
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UntrustedPath(exc.errno, f"{here} changed while it was opened (not followed)") from None
                raise
            walked.append(name)
            _pop_ups(todo, stack, walked)
        return stack.pop()
    finally:
        for fd in stack:
            os.close(fd)


def _pop_ups(todo: deque[str], stack: list[int], walked: list[str]) -> None:
    """Apply the '..' of a trusted link's target (marked "\\x00up") at the head of the queue."""
    while todo and todo[0] == "\x00up":
        todo.popleft()
        if len(stack) > 1:
            os.close(stack.pop())
            walked.pop()


__all__ = ["open_dir", "UntrustedPath", "MAX_LINKS"]
