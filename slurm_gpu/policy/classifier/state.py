# SPDX-License-Identifier: Apache-2.0
"""The classifier's typed state: what the steps read (request, policy) and what they decide."""

from __future__ import annotations

from dataclasses import dataclass, field

from slurm_gpu.policy.model import MESSAGE_FIELDS, JobClass, Partition, Policy
from slurm_gpu.request import JobRequest


class Reject(Exception):
    """A step's rejection: the site's message and a fix for the user."""

    def __init__(self, message: str, fix: str | None):
        super().__init__(message)
        self.message, self.fix = message, fix


@dataclass
class State:
    request: JobRequest
    policy: Policy
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)  # sbatch options to add, in order, each once
    gpus: int = 0  # whole GPUs of the job
    gpu_type: str | None = None
    fraction: float | None = None  # part of one GPU (0 < f < 1)
    job_class: JobClass | None = None  # match_class
    partition: Partition | None = None  # place
    qos: str | None = None  # place
    gres: str | None = None  # resolve_gpus: "gpu:h100:4", "gpu:a100_1g.10gb:1", "mps:25"

    def reject(self, key: str, fix: str | None = None, **values: object) -> Reject:
        full = {f: "" for f in MESSAGE_FIELDS[key]} | values
        return Reject(self.policy.message(key, **full), fix)

    def add(self, opt: str) -> None:
        if opt not in self.options:
            self.options.append(opt)


def hint(word: str, choices: list[str]) -> str:
    """``did you mean 'x'? `` for the closest choice, or nothing."""
    import difflib  # only on rejections: keeps the accept path's imports small

    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""
