# SPDX-License-Identifier: Apache-2.0
"""A :class:`slurm_gpu.ports.ClusterSource` read from recorded files instead of a live Slurm:
``DIR/nodes.txt`` (``scontrol show node -d -o``), ``DIR/jobs.txt`` (``scontrol show job -d -o``),
``DIR/partitions.txt`` (``scontrol show partition -o``) and ``DIR/gres.conf``; all but nodes.txt optional.
Used by ``slurm-gpu cluster --records DIR`` (replaying a capture) and benchmarks/bench_cluster.py.
"""

from __future__ import annotations

import os

from slurm_gpu.errors import UsageError

MAX_BYTES = 1 << 30  # a 2,000-node capture with its jobs is ~10 MB


class RecordedCluster:
    def __init__(self, directory: str):
        self.directory = directory

    def _read(self, name: str, required: bool = False) -> str | None:
        path = os.path.join(self.directory, name)
        try:
            if not os.path.isfile(path):
                raise OSError(2, "no such regular file")
            with open(path, encoding="utf-8", errors="replace") as fh:
                return fh.read(MAX_BYTES)
        except OSError as exc:
            if required:
                raise UsageError(f"{path}: {exc.strerror or 'not a regular file'}") from None
            return None

    def nodes_text(self) -> str:
        return self._read("nodes.txt", required=True) or ""

    def jobs_text(self) -> str:
        return self._read("jobs.txt") or ""

    def partitions_text(self) -> str:
        return self._read("partitions.txt") or ""

    def gres_conf_text(self) -> str | None:
        return self._read("gres.conf")


__all__ = ["RecordedCluster"]
