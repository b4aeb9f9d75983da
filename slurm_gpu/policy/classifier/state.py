# SPDX-License-Identifier: Apache-2.0
"""The classifier's typed state: what the steps read (request, policy) and what they decide."""

from __future__ import annotations

from slurm_gpu.policy.model import MESSAGE_FIELDS, JobClass, Partition, Policy
from slurm_gpu.policy.nodes import Inventory
from slurm_gpu.request import JobRequest


class Reject(Exception):
    """A step's rejection: the site's message and a fix for the user."""

    def __init__(self, message: str, fix: str | None, key: str | None = None):
        super().__init__(message)
        self.message, self.fix, self.key = message, fix, key


class State:
    """One classification's working state (a plain class: a dataclass costs gpusub ~1 ms at import)."""

    __slots__ = ("request", "policy", "reasons", "warnings", "options", "gpus", "gpu_type", "fraction",
                 "job_class", "partition", "qos", "gres", "mig_profile", "inventory", "nodes_needed")

    def __init__(self, request: JobRequest, policy: Policy, inventory: Inventory) -> None:
        self.request = request
        self.policy = policy
        self.inventory = inventory  # what the nodes offer (policy.nodes): the policy's, or the live cluster's
        self.nodes_needed = 1  # resolve_gpus: the fewest nodes the job's GPUs need
        self.reasons: list[str] = []
        self.warnings: list[str] = []
        self.options: list[str] = []  # sbatch options to add, in order, each once
        self.gpus = 0  # whole GPUs of the job
        self.gpu_type: str | None = None
        self.fraction: float | None = None  # part of one GPU (0 < f < 1)
        self.job_class: JobClass | None = None  # match_class
        self.partition: Partition | None = None  # place
        self.qos: str | None = None  # place
        self.gres: str | None = None  # resolve_gpus: "gpu:h100:4", "gpu:a100_1g.10gb:1", "mps:25"
        self.mig_profile: str | None = None  # check_request: the MIG slice the request named as a gres type

    def reject(self, key: str, fix: str | None = None, **values: object) -> Reject:
        full = {f: "" for f in MESSAGE_FIELDS[key]} | values
        return Reject(self.policy.message(key, **full), fix, key)

    def add(self, opt: str) -> None:
        if opt not in self.options:
            self.options.append(opt)


def hint(word: str, choices: list[str]) -> str:
    """``did you mean 'x'? `` for the closest choice, or nothing."""
    import difflib  # only on rejections: keeps the accept path's imports small

    same = [c for c in choices if c.lower() == word.lower()]  # Slurm's names are case-sensitive: A100 -> a100
    close = same or difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""
