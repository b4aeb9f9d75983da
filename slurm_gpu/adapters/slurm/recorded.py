# SPDX-License-Identifier: Apache-2.0
"""A :class:`slurm_gpu.ports.ClusterSource` read from recorded files instead of a live Slurm:
``DIR/nodes.txt`` (``scontrol show node -d -o``), ``DIR/jobs.json`` (``squeue --json -t all``; 24.11+:
``squeue --json=v0.0.42 -t all``), ``DIR/partitions.txt`` (``scontrol show partition -o``) and
``DIR/gres.conf``; all but nodes.txt optional. A ``jobs.txt`` (scontrol's text, which the user's text can
forge: docs/records.md) is not read; without jobs.json it is a usage error that says so.
Used by ``slurm-gpu cluster --records DIR`` (replaying a capture) and benchmarks/bench_cluster.py.
"""

from __future__ import annotations

import errno
import os
import stat

from slurm_gpu.errors import UsageError

MAX_BYTES = 256 << 20  # a 2,000-node capture with its jobs is ~10 MB; 20,000 nodes stay well under this


class RecordedCluster:
    def __init__(self, directory: str):
        self.directory = directory

    def _read(self, name: str, required: bool = False) -> str | None:
        """The file's text; None when an optional file is missing. A FIFO, a device or a file over
        MAX_BYTES is an error (exit 2), never a hang or a truncated read."""
        path = os.path.join(self.directory, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            if required or exc.errno != errno.ENOENT:
                raise UsageError(f"{path}: {exc.strerror or exc}") from None
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise UsageError(f"{path}: not a regular file")
            if st.st_size > MAX_BYTES:
                raise UsageError(f"{path}: {st.st_size} bytes, over the {MAX_BYTES >> 20} MiB a record file may have")
            with os.fdopen(fd, "rb", closefd=False) as fh:
                data = fh.read(MAX_BYTES + 1)
            if len(data) > MAX_BYTES:
                raise UsageError(f"{path}: over the {MAX_BYTES >> 20} MiB a record file may have")
            return data.decode("utf-8", errors="replace")
        except OSError as exc:
            raise UsageError(f"{path}: {exc.strerror or exc}") from None
        finally:
            os.close(fd)

    def nodes_text(self) -> str:
        return self._read("nodes.txt", required=True) or ""

    def jobs_json(self) -> str:
        text = self._read("jobs.json")
        if text is None and os.path.lexists(os.path.join(self.directory, "jobs.txt")):
            raise UsageError(f"{os.path.join(self.directory, 'jobs.txt')}: scontrol's job text is not read (a job's "
                             "name can forge it); record the jobs with: squeue --json -t all > jobs.json")
        if text is not None and not text.lstrip().startswith("{"):
            raise UsageError(f"{os.path.join(self.directory, 'jobs.json')}: not squeue's JSON (record it with: "
                             "squeue --json -t all > jobs.json)")
        return text or ""

    def partitions_text(self) -> str:
        return self._read("partitions.txt") or ""

    def gres_conf_text(self) -> str | None:
        return self._read("gres.conf")

    def topology_text(self) -> str:
        return self._read("topology.txt") or ""  # scontrol show topology > topology.txt


__all__ = ["RecordedCluster"]
