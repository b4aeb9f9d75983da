# SPDX-License-Identifier: Apache-2.0
"""Compile a site policy to job_submit.lua and install it where slurmctld reads it (filesystem
adapter around the pure compiler :func:`slurm_gpu.emit.job_submit.compile_policy`). Used by
``slurm-gpu policy compile``, ``slurm-gpu admin`` and the lab.

slurmctld's job_submit/lua re-reads the script while it runs, when the file's modification time (whole
seconds) is later than that of the script it loaded last. The new text is written to a temporary file
created in the same directory (O_EXCL, mode 0644: slurmctld runs as SlurmUser) and renamed over the old
file, so the plugin never reads half a script and a symlink at the destination is replaced, never
followed. Its mtime is at least one second past the old file's, or a script replaced within the same
second would never be read (measured on 22.05.8: the old script kept running).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time

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
    holds exactly ``text`` (left alone: no needless reload), True when written. OSError on failure."""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        if os.path.isfile(dst) and not os.path.islink(dst):
            with open(dst, encoding="utf-8") as fh:
                if fh.read(len(text) + 1) == text:
                    return False
    fd, tmp = tempfile.mkstemp(prefix=".job_submit.", suffix=".lua.tmp", dir=os.path.dirname(dst) or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())  # never an empty script after a crash: slurmctld would not start
        os.chmod(tmp, 0o644)
        mtime = int(time.time())
        for look in (os.lstat, os.stat):  # a link at dst: slurmctld loaded its target's mtime
            with contextlib.suppress(OSError):
                mtime = max(mtime, int(look(dst).st_mtime) + 1)
        with contextlib.suppress(OSError):
            os.utime(tmp, (mtime, mtime))
        os.replace(tmp, dst)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return True


def install_policy(policy_path: str, dst: str) -> bool:
    """Compile the policy and install it at ``dst``; SlurmGpuError with one clear line on failure."""
    text = compile_file(policy_path)
    try:
        return install_text(text, dst)
    except OSError as e:
        raise SlurmGpuError(f"cannot write {dst}: {e.strerror or e}") from e


__all__ = ["compile_file", "install_text", "install_policy", "slurm_conf_dir", "SCRIPT_NAME"]
