# SPDX-License-Identifier: Apache-2.0
"""Splitting an iterable into job arrays, pure: no array longer than the cluster's MaxArraySize (indices
0..MaxArraySize-1) nor than the QOS's MaxSubmitJobs; ``%N`` throttles each."""

from __future__ import annotations

from slurm_gpu.plain import Record, record

DEFAULT_MAX_ARRAY_SIZE = 1001  # Slurm's default MaxArraySize (slurm.conf(5))


@record
class ArrayChunk(Record):
    """Items ``start .. start+count-1`` of the input, as one array ``0-(count-1)[%throttle]``."""

    start: int
    count: int
    throttle: int | None = None

    @property
    def spec(self) -> str:
        text = f"0-{self.count - 1}" if self.count > 1 else "0"
        return text + (f"%{self.throttle}" if self.throttle else "")


def plan_arrays(n: int, max_array_size: int, max_submit: int | None = None,
                throttle: int | None = None) -> list[ArrayChunk]:
    """The arrays for ``n`` items, in input order."""
    if n <= 0:
        return []
    size = max(1, max_array_size)
    if max_submit is not None and max_submit > 0:
        size = min(size, max_submit)
    return [ArrayChunk(start, min(size, n - start), throttle) for start in range(0, n, size)]


def read_max_array_size(config_text: str) -> int | None:
    """MaxArraySize from ``scontrol show config``; None when absent."""
    for line in config_text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "MaxArraySize":
            v = value.strip()
            return int(v) if v.isascii() and v.isdigit() and len(v) < 10 else None
    return None


def read_max_submit(qos_text: str, qos: str | None) -> int | None:
    """The least MaxSubmitJobsPerUser / MaxSubmitJobs of ``sacctmgr -nP show qos
    format=Name,MaxSubmitJobsPerUser,MaxSubmitJobs`` for ``qos`` (None: the first, unset: None)."""
    for line in qos_text.splitlines():
        parts = line.split("|")
        if len(parts) < 3 or (qos is not None and parts[0] != qos):
            continue
        limits = [int(p) for p in parts[1:3] if p.isascii() and p.isdigit() and len(p) < 10]
        return min(limits) if limits else None
    return None


__all__ = ["ArrayChunk", "plan_arrays", "read_max_array_size", "read_max_submit", "DEFAULT_MAX_ARRAY_SIZE"]
