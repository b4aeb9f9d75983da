# SPDX-License-Identifier: Apache-2.0
"""Priority (priority/multifactor) and fair share: classic, or Fair Tree (:mod:`slurm_gpu.sim.fairtree`).

``priority = W_age * min(1, age / PriorityMaxAge) + W_qos * qos / max_qos + W_partition * tier / max_tier
+ W_fairshare * F``, each factor in [0, 1] as Slurm normalises them; ``age`` counts from the time the
job became eligible (its submit, or its last requeue). Usage is charged per (account, user) association
in billing units: ``billing = sum(w_t * TRES_t)`` over cpu, mem (GB) and gres/gpu (TRESBillingWeights;
with PriorityFlags=MAX_TRES the largest ``w_t * TRES_t`` instead), times the seconds run, when a run ends;
all usage is halved every PriorityDecayHalfLife. Classic fair share: ``F = 2^(-U/S)``, ``U`` the
account's share of all usage and ``S`` its normalised shares (read as of the computation). Fair Tree:
the rank-based factor of the job's user association, re-ranked every PriorityCalcPeriod. Priorities are
recomputed every PriorityCalcPeriod; a job's first priority is computed at submit. The scheduler orders
jobs by their partition's PriorityTier, then priority, then submit time and trace order (:func:`order_key`).
"""

from __future__ import annotations

from collections.abc import Iterable

from slurm_gpu.sim.fairtree import Assoc, Tree, factors
from slurm_gpu.sim.params import Params, SimJob

TRES = ("cpu", "mem", "gres/gpu")  # the TRES a billing weight may name (mem in GB)


def priority(params: Params, age_s: int, qos_norm: float, tier_norm: float, fairshare: float) -> float:
    age = min(1.0, age_s / params.max_age_s) if params.max_age_s > 0 else 0.0
    return (params.weight_age * max(age, 0.0) + params.weight_qos * qos_norm
            + params.weight_partition * tier_norm + params.weight_fairshare * fairshare)


def order_key(job: SimJob) -> tuple[int, float, int, int]:
    return (-job.tier, -job.prio, job.submit, job.idx)


def billing(params: Params, job: SimJob) -> float:
    """The job's billing TRES per second (TRESBillingWeights; MAX_TRES: the largest weighted TRES)."""
    have = {"cpu": float(job.cpus), "mem": job.mem_gb, "gres/gpu": job.gpus}
    parts = [w * have.get(t.lower(), 0.0) for t, w in params.billing_weights]
    if not parts:
        return 0.0
    return max(parts) if params.max_tres else sum(parts)


def assoc_of(job: SimJob) -> Assoc:
    return (job.account or "", job.user or "")


class FairShare:
    """Classic fair share: decayed usage per account (billing-seconds), and the factor 2^(-U/S), as of now.
    ``S``: the account's normalised shares in ``tree`` when given, else 1 / ``accounts``."""

    __slots__ = ("half_life_s", "usage", "total", "when", "accounts", "tree")

    def __init__(self, half_life_s: int, accounts: int, tree: Tree | None = None) -> None:
        self.half_life_s = half_life_s
        self.usage: dict[str, float] = {}
        self.total = 0.0
        self.when = 0  # usage values are as of this time
        self.accounts = max(1, accounts)
        self.tree = tree

    def decay_to(self, now: int) -> None:
        if now <= self.when:
            return
        if self.half_life_s > 0:
            f = 0.5 ** ((now - self.when) / self.half_life_s)
            self.usage = {a: u * f for a, u in self.usage.items()}
            self.total *= f
        self.when = now

    def charge(self, account: str | None, amount: float) -> None:
        key = account or ""
        self.usage[key] = self.usage.get(key, 0.0) + amount
        self.total += amount

    def factor(self, account: str | None) -> float:
        if self.total <= 0:
            return 1.0
        u = self.usage.get(account or "", 0.0) / self.total
        s = self.tree.entitlement(account or "") if self.tree is not None else 1.0 / self.accounts
        return float(2.0 ** (-u / s)) if s > 0 else 0.0


class FairTreeShare:
    """Fair Tree: decayed usage per user association (billing-seconds); the factors are ranks, recomputed
    every PriorityCalcPeriod (:func:`slurm_gpu.sim.fairtree.factors`)."""

    __slots__ = ("half_life_s", "usage", "when", "tree", "_factors")

    def __init__(self, half_life_s: int, tree: Tree) -> None:
        self.half_life_s = half_life_s
        self.usage: dict[Assoc, float] = {}
        self.when = 0
        self.tree = tree
        self._factors = factors(tree, self.usage)

    def decay_to(self, now: int) -> None:
        if now > self.when and self.half_life_s > 0:
            f = 0.5 ** ((now - self.when) / self.half_life_s)
            self.usage = {a: u * f for a, u in self.usage.items()}
        self.when = max(self.when, now)

    def charge(self, assoc: Assoc, amount: float) -> None:
        self.usage[assoc] = self.usage.get(assoc, 0.0) + amount

    def recompute(self) -> None:
        self._factors = factors(self.tree, self.usage)

    def factor(self, assoc: Assoc) -> float:
        return self._factors.get(assoc, 1.0)


class Prioritiser:
    """Priorities of jobs under one policy's QOS priorities and partition tiers."""

    __slots__ = ("params", "max_qos", "max_tier", "tree", "classic", "fairtree")

    def __init__(self, params: Params, max_qos: int, max_tier: int, assocs: Iterable[Assoc]) -> None:
        self.params = params
        self.max_qos = max(1, max_qos)
        self.max_tier = max(1, max_tier)
        assocs = set(assocs)
        self.tree = Tree(assocs, dict(params.shares))
        on = bool(params.weight_fairshare)
        self.classic = (FairShare(params.half_life_s, len({a for a, _ in assocs}),
                                  self.tree if params.shares else None)
                        if on and params.fairshare == "classic" else None)
        self.fairtree = FairTreeShare(params.half_life_s, self.tree) if on and params.fairshare == "fair-tree" else None

    def charge(self, job: SimJob, seconds: int, now: int) -> None:
        if self.classic is not None:
            self.classic.decay_to(now)
            self.classic.charge(job.account, billing(self.params, job) * seconds)
        elif self.fairtree is not None:
            self.fairtree.decay_to(now)
            self.fairtree.charge(assoc_of(job), billing(self.params, job) * seconds)

    def recompute(self, now: int) -> None:
        """At PriorityCalcPeriod: decay, and Fair Tree's ranks (classic's factor is read live)."""
        if self.classic is not None:
            self.classic.decay_to(now)
        if self.fairtree is not None:
            self.fairtree.decay_to(now)
            self.fairtree.recompute()

    def entity(self, job: SimJob) -> str | Assoc | None:
        """What the job's fair-share factor belongs to: its account (classic), its user association (Fair
        Tree), or None (no fair share)."""
        if self.classic is not None:
            return job.account or ""
        if self.fairtree is not None:
            return assoc_of(job)
        return None

    def factor(self, entity: str | Assoc | None) -> float:
        """The fair-share factor of an :meth:`entity` as of now (classic: live; Fair Tree: the last ranks)."""
        if self.classic is not None and isinstance(entity, str):
            return self.classic.factor(entity)
        if self.fairtree is not None and isinstance(entity, tuple):
            return self.fairtree.factor(entity)
        return 0.0

    def at(self, job: SimJob, now: int, fs: float) -> float:
        """The job's priority at ``now`` with the fair-share factor ``fs``."""
        return priority(self.params, now - job.eligible, job.qos_prio / self.max_qos, job.tier / self.max_tier, fs)

    def compute(self, job: SimJob, now: int) -> float:
        return self.at(job, now, self.factor(self.entity(job)))
