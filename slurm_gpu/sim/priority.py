# SPDX-License-Identifier: Apache-2.0
"""Priority (priority/multifactor) and classic fair share.

``priority = W_age * min(1, age / PriorityMaxAge) + W_qos * qos / max_qos + W_partition * tier / max_tier
+ W_fairshare * F``, each factor in [0, 1] as Slurm normalises them; ``age`` counts from the time the
job became eligible (its submit, or its last requeue). Classic fair share: ``F = 2^(-U/S)`` with ``U``
the account's share of the decayed usage (GPU-seconds, halved every PriorityDecayHalfLife) and ``S``
its normalised shares (every account of the trace has the same). Priorities are recomputed every
PriorityCalcPeriod; a job's first priority is computed at submit. The scheduler orders jobs by their
partition's PriorityTier, then priority, then submit time and trace order (:func:`order_key`).
"""

from __future__ import annotations

from slurm_gpu.sim.params import Params, SimJob


def priority(params: Params, age_s: int, qos_norm: float, tier_norm: float, fairshare: float) -> float:
    age = min(1.0, age_s / params.max_age_s) if params.max_age_s > 0 else 0.0
    return (params.weight_age * max(age, 0.0) + params.weight_qos * qos_norm
            + params.weight_partition * tier_norm + params.weight_fairshare * fairshare)


def order_key(job: SimJob) -> tuple[int, float, int, int]:
    return (-job.tier, -job.prio, job.submit, job.idx)


class FairShare:
    """Decayed usage per account (GPU-seconds), and the classic factor 2^(-U/S)."""

    __slots__ = ("half_life_s", "usage", "total", "when", "accounts")

    def __init__(self, half_life_s: int, accounts: int) -> None:
        self.half_life_s = half_life_s
        self.usage: dict[str, float] = {}
        self.total = 0.0
        self.when = 0  # usage values are as of this time
        self.accounts = max(1, accounts)

    def decay_to(self, now: int) -> None:
        if now <= self.when:
            return
        if self.half_life_s > 0:
            f = 0.5 ** ((now - self.when) / self.half_life_s)
            self.usage = {a: u * f for a, u in self.usage.items()}
            self.total *= f
        self.when = now

    def charge(self, account: str | None, gpu_s: float) -> None:
        key = account or ""
        self.usage[key] = self.usage.get(key, 0.0) + gpu_s
        self.total += gpu_s

    def factor(self, account: str | None) -> float:
        if self.total <= 0:
            return 1.0
        u = self.usage.get(account or "", 0.0) / self.total
        return float(2.0 ** (-u * self.accounts))  # S = 1 / accounts


class Prioritiser:
    """Priorities of jobs under one policy's QOS priorities and partition tiers."""

    __slots__ = ("params", "max_qos", "max_tier", "fairshare")

    def __init__(self, params: Params, max_qos: int, max_tier: int, accounts: int) -> None:
        self.params = params
        self.max_qos = max(1, max_qos)
        self.max_tier = max(1, max_tier)
        self.fairshare = FairShare(params.half_life_s, accounts) if params.weight_fairshare else None

    def compute(self, job: SimJob, now: int) -> float:
        fs = self.fairshare.factor(job.account) if self.fairshare is not None else 0.0
        return priority(self.params, now - job.eligible, job.qos_prio / self.max_qos, job.tier / self.max_tier, fs)
