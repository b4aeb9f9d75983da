# SPDX-License-Identifier: Apache-2.0
"""Warnings for a valid policy: classes that can never match and classes shadowed by earlier ones."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from slurm_gpu.policy.model import JobClass, Match, Policy
from slurm_gpu.policy.nodes import Inventory

if TYPE_CHECKING:
    from slurm_gpu.policy.validate import Context

INF = float("inf")


def _where(ctx: Any, name: str) -> str:
    for e in getattr(ctx, "entries", {}).get("classes", []):
        if e.values.get("name") == name:
            return f"{e.where('match')}: "
    return ""


def never_matches(c: JobClass, policy: Policy) -> str | None:
    """Why a class can never accept a job (None when it can)."""
    m = c.match
    lo, hi = m.min_gpus or 0, INF if m.max_gpus is None else m.max_gpus
    if lo > hi:
        return f"match.min_gpus {lo} > match.max_gpus {m.max_gpus}"
    if m.gpu_fraction and lo > 0:
        return "match.gpu_fraction true with match.min_gpus > 0 (fractional requests have 0 whole GPUs)"
    part = policy.partition(c.partition)
    if part is None:
        return None
    capacity = sum(policy.gpu_capacity(part.name, t)[1] for t in policy.partition_gpu_types(part.name))
    if lo > capacity and not m.gpu_fraction:
        return f"match.min_gpus {lo} exceeds the {capacity} GPUs of partition {part.name}"
    q = policy.qos_named(c.qos or part.default_qos)
    if q is not None and q.max_gpus_per_job is not None and lo > q.max_gpus_per_job:
        return f"match.min_gpus {lo} exceeds QOS {q.name} max_gpus_per_job {q.max_gpus_per_job}"
    if m.gpu_types:
        offered = policy.partition_gpu_types(part.name)
        if not set(m.gpu_types) & set(offered):
            return f"match.gpu_types {', '.join(m.gpu_types)} not offered by partition {part.name}"
    return None


def _covers(a: Match, b: Match) -> bool:
    """True when every request matching b also matches a."""
    if (a.min_gpus or 0) > (b.min_gpus or 0):
        return False
    if (INF if a.max_gpus is None else a.max_gpus) < (INF if b.max_gpus is None else b.max_gpus):
        return False
    if (INF if a.max_time_min is None else a.max_time_min) < (INF if b.max_time_min is None else b.max_time_min):
        return False
    for attr in ("array", "interactive", "gpu_fraction"):
        if getattr(a, attr) is not None and getattr(a, attr) != getattr(b, attr):
            return False
    for attr in ("gpu_types", "accounts", "users", "groups"):
        av, bv = getattr(a, attr), getattr(b, attr)
        if av and (not bv or not set(bv) <= set(av)):
            return False
    return True


def lint_policy(policy: Policy, ctx: Context | None = None) -> list[str]:
    out: list[str] = []
    for i, c in enumerate(policy.classes):
        why = never_matches(c, policy)
        if why:
            out.append(f"{_where(ctx, c.name)}classes.{c.name}: can never match: {why}")
            continue
        if c.match.explicit:
            continue
        for earlier in policy.classes[:i]:
            if earlier.match.explicit or never_matches(earlier, policy):
                continue
            offered_b = set(policy.partition_gpu_types(c.partition))
            offered_a = set(policy.partition_gpu_types(earlier.partition))
            if offered_b <= offered_a and _covers(earlier.match, c.match):
                out.append(f"{_where(ctx, c.name)}classes.{c.name}: shadowed by earlier class {earlier.name} "
                           f"(every request it matches goes to {earlier.name}); reachable only with "
                           "--class or --partition")
                break
    if not policy.classes:
        out.append("classes: none defined; every request will be rejected")
    return out


def live_warnings(policy: Policy, partitions: tuple[str, ...], qos: tuple[str, ...] | None,
                  gpu_types: tuple[str, ...]) -> list[str]:
    """Names the policy uses that the live cluster lacks (inputs come from the slurm_inventory adapter)."""
    out = [f"partitions.{p.name}: not a partition of the live cluster (scontrol show partition)"
           for p in policy.partitions if p.name not in partitions]
    if qos is not None:
        out += [f"qos.{q.name}: not a QOS of the live cluster (sacctmgr show qos)" for q in policy.qos
                if q.name not in qos]
    used = sorted({nt.gpu_type for nt in policy.node_types if nt.gpu_type})
    out += [f"gpu_types.{t}: no node of the live cluster has gres gpu:{t} (sinfo -o %G)" for t in used
            if t not in gpu_types]
    return out


def mig_spelling_warnings(policy: Policy, from_attributes: bool, release: str) -> list[str]:
    """Static MIG profiles that Slurm ``release``'s gpu/nvml (AutoDetect=nvml) would name otherwise
    (``from_attributes``: release.py ``mig_profile_from_attributes``, 22.05: the A100 80GB's 3g.40gb is
    detected as 3g.39gb), so the node would register a gres type the policy does not name."""
    from slurm_gpu.sharing.mig import detected_profile

    out = []
    for nt in policy.node_types:
        g = policy.gpu_type(nt.gpu_type) if nt.gpu_type else None
        if nt.mig_mode != "static" or g is None:
            continue
        for prof in dict.fromkeys(nt.mig_layout):
            seen = detected_profile(g.name, int(g.memory_gb), prof, from_attributes)
            if seen is not None and seen != prof:
                out.append(f"node_types.{nt.name}.mig_layout: Slurm {release}'s gpu/nvml (AutoDetect=nvml) names "
                           f"the {prof} slice of GPU type {g.name} ({int(g.memory_gb)} GB) {seen!r}: "
                           "such a node registers "
                           f"gpu:{g.name}_{seen}, not gpu:{g.name}_{prof}; use the emitted gres.conf lines "
                           "(AutoDetect=off) on that node, or another profile")
    return out


def unserved_slices(policy: Policy, inventory: Inventory) -> list[str]:
    """Warnings for MIG slices the policy routes fractions to (its MIG-capable types' allowed profiles,
    per partition) that no node of the partition offers in ``inventory`` (the live cluster's records)."""
    iso = policy.isolation
    out: list[str] = []
    if iso.fraction_mode == "reject":
        return out
    for part in policy.partitions:
        nodes = inventory.in_partition(part.name)
        if not nodes:
            continue
        missing = []
        for t in policy.partition_gpu_types(part.name):
            g = policy.gpu_type(t)
            if g is None or not g.mig_capable:
                continue
            for prof in g.mig_profiles:
                if (not iso.mig_profiles or prof in iso.mig_profiles) and not any(
                        n.count("gpu", f"{t}_{prof}") for n in nodes):
                    missing.append(f"{t}_{prof}")
        if missing:
            out.append(f"partitions.{part.name}: the policy routes GPU fractions to MIG slices "
                       f"{', '.join(missing)} that no node of the partition offers (scontrol show node); "
                       "gpusub --gpu-fraction is refused there until the nodes carry them")
    return out
