# SPDX-License-Identifier: Apache-2.0
"""Compile a site policy to job_submit.lua and install it where slurmctld reads it (filesystem
adapter around the pure compiler :func:`slurm_gpu.emit.job_submit.compile_policy`). Used by
``slurm-gpu policy compile``, ``slurm-gpu admin`` and the lab.

slurmctld's job_submit/lua re-reads the script while it runs, when the file's modification time (whole
seconds) is later than that of the script it loaded last. The new text is written to a temporary file
created in the same directory (O_EXCL|O_NOFOLLOW, mode 0644: slurmctld runs as SlurmUser) and renamed
over the old file (slurm_gpu/adapters/fs.py write_atomic), so the plugin never reads half a script and a
symlink at the destination is replaced, never followed. Run by root, a directory that a non-root user
owns or can write is refused before anything is written. Its mtime is at least one second past the
old file's, or a script replaced within the same second would never be read (measured on 22.05.8: the
old script kept running).
"""

from __future__ import annotations

import contextlib
import os
import time

from slurm_gpu.adapters import fs
from slurm_gpu.errors import SlurmGpuError

SCRIPT_NAME = "job_submit.lua"


def template_dir() -> str:
    """``job_submit/`` beside the package (source tree) or ``<prefix>/share/slurm-gpu/job_submit`` (installed)."""
    import sys

    from slurm_gpu.emit.job_submit import ENGINE_NAME, SOURCE_DIR

    if os.path.isfile(os.path.join(SOURCE_DIR, ENGINE_NAME)):
        return SOURCE_DIR
    return os.path.join(sys.prefix, "share", "slurm-gpu", "job_submit")


def compile_file(policy_path: str) -> str:
    """The job_submit.lua text of the policy file; PolicyError (file:line: field) when it is invalid."""
    from slurm_gpu.emit.job_submit import compile_policy
    from slurm_gpu.policy import load_policy

    return compile_policy(load_policy(policy_path), template_dir())


def slurm_conf_dir(env: dict[str, str] | None = None) -> str:
    """The directory of slurm.conf (``SLURM_CONF``, else /etc/slurm), where job_submit.lua belongs."""
    conf = (env if env is not None else os.environ).get("SLURM_CONF") or "/etc/slurm/slurm.conf"
    return os.path.dirname(os.path.abspath(conf))


def install_text(text: str, dst: str) -> bool:
    """Write ``text`` to ``dst`` atomically (see the module doc). Returns False when ``dst`` already
    holds exactly ``text`` (left alone: no needless reload), True when written. OSError on failure,
    :class:`slurm_gpu.adapters.fs.Untrusted` for a directory that root must not write (a user's)."""
    parent, name = os.path.split(os.path.abspath(dst))
    data = text.encode("utf-8")
    dfd = fs.open_dir(parent or "/", trust=fs.CALLER)
    try:
        with contextlib.suppress(OSError):
            if fs.read_capped(dfd, name, limit=len(data) + 1, missing_ok=True) == data:
                return False
        mtime = int(time.time())
        for follow in (False, True):  # a link at dst: slurmctld loaded its target's mtime
            with contextlib.suppress(OSError):
                mtime = max(mtime, int(os.stat(name, dir_fd=dfd, follow_symlinks=follow).st_mtime) + 1)
        # fsync: never an empty script after a crash (slurmctld would not start); 0644: slurmctld runs as SlurmUser
        fs.write_atomic(dfd, name, data, mode=0o644, sync=True, mtime=mtime, what=parent)
    finally:
        os.close(dfd)
    return True


def install_policy(policy_path: str, dst: str) -> bool:
    """Compile the policy and install it at ``dst``; SlurmGpuError with one clear line on failure."""
    text = compile_file(policy_path)
    try:
        return install_text(text, dst)
    except OSError as e:
        raise SlurmGpuError(f"cannot write {dst}: {e.strerror or e}") from e


__all__ = ["compile_file", "install_text", "install_policy", "slurm_conf_dir", "SCRIPT_NAME"]
