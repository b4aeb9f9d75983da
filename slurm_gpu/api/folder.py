# SPDX-License-Identifier: Apache-2.0
"""The executor's folder (docs/python-api.md, "The folder"): pickled tasks, results and logs, readable
and writable by the user only.

- The folder is opened through slurm_gpu/adapters/fs.py: walked from ``/`` without following a
  symlink a user other than the caller (or root) could plant, the last component never a symlink,
  created 0700, owned by the caller; a folder of the caller's with a wider mode is narrowed to 0700.
- Every file is written by ``fs.write_atomic`` (O_EXCL|O_NOFOLLOW temp file, fchmod 0600, renameat).
- A pickle is loaded only from a regular file owned by the caller, with no group/other permission
  bits and one hard link (the per-user cache's rules, slurm_gpu/adapters/cache.py); anything else is
  refused as ``Untrusted`` before a byte is unpickled.

Names: ``KEY.task.pkl`` (what runs), ``KEY.result.pkl`` (what came back), ``KEY.out``/``KEY.err``
(Slurm's output; array tasks ``CHUNK_%a``), ``KEY.stopped`` (a checkpoint was made on the stop signal).
"""

from __future__ import annotations

import os
import pickle
import stat
from typing import Any

from slurm_gpu.adapters import fs

MAX_PICKLE = 1 << 31  # bytes of one task or result
MODE = 0o600


def dumps(obj: object) -> bytes:
    """cloudpickle when installed (functions defined in __main__ or a notebook), else pickle."""
    try:
        import cloudpickle  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    data: bytes = cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return data


class Folder:
    """One executor folder (an absolute path)."""

    def __init__(self, path: str | os.PathLike[str], create: bool = True) -> None:
        self.path = os.path.abspath(os.fspath(path))
        fd = self._open(create)
        try:
            st = os.fstat(fd)
            if stat.S_IMODE(st.st_mode) & 0o077:
                os.fchmod(fd, 0o700)
        finally:
            os.close(fd)

    def _open(self, create: bool = False) -> int:
        return fs.open_dir(self.path, create=create, mode=0o700, uid=os.geteuid(), follow_last=False)

    def file(self, name: str) -> str:
        return os.path.join(self.path, name)

    def write(self, name: str, data: bytes) -> str:
        fd = self._open()
        try:
            return fs.write_atomic(fd, name, data, mode=MODE, what=self.path)
        finally:
            os.close(fd)

    def write_obj(self, name: str, obj: object) -> str:
        return self.write(name, dumps(obj))

    def read(self, name: str, limit: int = MAX_PICKLE) -> bytes | None:
        """The file's bytes when it is the caller's own private file; None when missing; Untrusted else."""
        fd = self._open()
        try:
            return fs.read_capped(fd, name, limit=limit, missing_ok=True, uid=os.geteuid(), private=True,
                                  one_link=True)
        finally:
            os.close(fd)

    def load(self, name: str) -> Any:
        """The unpickled object of a trusted file (see the module doc); None when missing."""
        data = self.read(name)
        return None if data is None else pickle.loads(data)  # noqa: S301 (owner and mode checked)

    def exists(self, name: str) -> bool:
        fd = self._open()
        try:
            os.stat(name, dir_fd=fd, follow_symlinks=False)
            return True
        except FileNotFoundError:
            return False
        finally:
            os.close(fd)

    def remove(self, names: list[str]) -> None:
        fd = self._open()
        try:
            for name in names:
                fs.remove(fd, name)
        finally:
            os.close(fd)

    def text(self, name: str, limit: int = 64 << 20) -> str | None:
        """A log's text (owner checked, any mode: Slurm writes logs 0644 under the user's umask)."""
        fd = self._open()
        try:
            data = fs.read_capped(fd, name, limit=limit, missing_ok=True, uid=os.geteuid())
        except fs.Untrusted:
            return None
        finally:
            os.close(fd)
        return None if data is None else data.decode("utf-8", "replace")


__all__ = ["Folder", "dumps", "MAX_PICKLE"]
