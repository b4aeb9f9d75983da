# SPDX-License-Identifier: Apache-2.0
"""Step ``resolve_gpus``: a GPU fraction becomes a MIG slice or an MPS share; whole GPUs get a type
(typed enforcement), are checked against QOS and partition limits and split over nodes; sets ``gres``."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from slurm_gpu.policy.classifier.fit import candidates, type_fits
from slurm_gpu.policy.classifier.state import State, hint
from slurm_gpu.policy.model import Partition
from slurm_gpu.units import parse_mig_profile

if TYPE_CHECKING:
    from slurm_gpu.request import JobRequest


def _mig_candidates(st: State, part: Partition) -> list[tuple[int, int, str, str]]:
    """(slices, memory_gb, gpu type, profile) for MIG profiles usable in the partition."""
    pol, iso = st.policy, st.policy.isolation
    out = []
    for t in pol.partition_gpu_types(part.name):
        gt = pol.gpu_type(t)
        if gt is None or not gt.mig_capable or (st.gpu_type and t != st.gpu_type):
            continue
        for prof in gt.mig_profiles:
            if iso.mig_profiles and prof not in iso.mig_profiles:
                continue
            p = parse_mig_profile(prof)  # validated when the policy was loaded
            out.append((p.slices, p.memory_gb, t, prof))
    return sorted(out)


def fraction(st: State, part: Partition) -> None:
    iso, f, r = st.policy.isolation, st.fraction or 0.0, st.request
    mode = iso.fraction_mode
    if mode == "reject":
        raise st.reject("fraction", "ask for a whole GPU (--gpus=<type>:1)", fraction=f,
                        why="this site does not share GPUs")
    profile = st.mig_profile or r.mig_profile
    use_mig = mode == "mig" or (mode == "mig-then-mps" and f <= iso.mig_max_fraction) or profile
    if use_mig:
        cands = _mig_candidates(st, part)
        if profile:
            cands = [c for c in cands if c[3] == profile]
        fits = [c for c in cands if c[0] / 7 >= f - 1e-9]
        nodes = candidates(st, part)
        served = [c for c in fits if any(n.count("gpu", f"{c[2]}_{c[3]}") for n in nodes)]
        if fits and not served and not st.mig_profile and nodes:
            # the policy routes the fraction to slices no node has: say so (policy check flags it too)
            slices_named = ", ".join(f"{c[2]}_{c[3]}" for c in fits)
            st.reasons.append(f"GPU fraction {f:g}: the policy's MIG slices ({slices_named}) are on no node of "
                              f"partition {part.name}")
            if mode == "mig":
                raise st.reject("fraction", "ask for a whole GPU (--gpus=<type>:1), or ask the site to configure "
                                "the MIG slices", fraction=f, why=f"no node of partition {part.name} has a MIG slice "
                                f"that covers it ({slices_named} are configured nowhere there)")
        elif served:
            fits = served
        if fits and (served or st.mig_profile or not nodes):
            slices, _, t, prof = fits[0]
            st.gpu_type, st.gpus = t, 1
            st.gres = f"gpu:{t}_{prof}:1"  # Slurm MIG type: a100_3g.40gb
            if not st.mig_profile:  # a slice the request named stays in the user's own option
                st.add(f"--gres={st.gres}")
            st.reasons.append(f"GPU fraction {f:g} -> MIG slice {prof} on {t} ({slices}/7 of the GPU)")
            return
        if mode == "mig" or profile:
            allowed = sorted({c[3] for c in cands})
            raise st.reject("fraction", f"use one of the MIG profiles {', '.join(allowed) or '(none)'} "
                            f"in partition {part.name}", fraction=f,
                            why=f"no allowed MIG profile in partition {part.name} covers it")
    pct = max(iso.mps_min_share_pct, math.ceil(f * 100 - 1e-9))
    if pct > iso.mps_max_share_pct:
        raise st.reject("fraction", f"ask for at most {iso.mps_max_share_pct / 100:g} of a GPU, or a whole GPU",
                        fraction=f, why=f"MPS shares are capped at {iso.mps_max_share_pct}%")
    st.gpus = 0
    st.gres = f"mps:{pct}"  # 100 mps units per GPU
    st.add(f"--gres={st.gres}")
    st.reasons.append(f"GPU fraction {f:g} -> MPS share of {pct}%")


def _resolve_type(st: State, part: Partition) -> str | None:
    pol, d, r = st.policy, st.policy.defaults, st.request
    offered = list(pol.partition_gpu_types(part.name))
    if st.gpu_type:
        if pol.gpu_type(st.gpu_type) is None:
            names = [g.name for g in pol.gpu_types]
            raise st.reject("unknown_gpu_type", f"{hint(st.gpu_type, names)}GPU types: {', '.join(names)}",
                            gpu_type=st.gpu_type)
        if st.gpu_type not in offered:
            where = [p.name for p in pol.partitions if st.gpu_type in pol.partition_gpu_types(p.name)]
            raise st.reject("gpu_type_not_in_partition",
                            f"use --gpus={'|'.join(offered) or '?'}:{st.gpus} here, or a partition with "
                            f"{st.gpu_type}: {', '.join(where) or '(none)'}", gpu_type=st.gpu_type,
                            partition=part.name)
        st.reasons.append(f"GPU type {st.gpu_type}: as requested, offered by {part.name}")
        return st.gpu_type
    fix = f"name the type: --gpus={'|'.join(offered) or '<type>'}:{st.gpus}"
    if d.untyped_gpus == "reject":
        raise st.reject("untyped_gpu", fix, gpus=st.gpus, partition=part.name)
    fitting = [t for t in offered if not st.inventory.nodes or type_fits(st, part, t)]
    preferred = [(src, t) for src, t in (("partition default", part.default_gpu_type), ("policy default", d.gpu_type))
                 if t and t in offered]
    narrowed = bool(r.constraint or r.nodelist or r.exclude)
    for source, t in preferred + [("only type in partition", offered[0])] * (len(offered) == 1):
        if t in fitting:
            st.reasons.append(f"GPU type {t}: untyped request resolved ({source}) so typed QOS limits apply")
            return t
    if fitting and (preferred or len(fitting) == 1):
        t = fitting[0]  # the policy's order among the types whose nodes meet -C / -w / -x
        st.reasons.append(f"GPU type {t}: untyped request resolved (the first type of {part.name} whose nodes "
                          f"meet {_narrowing(r)}) so typed QOS limits apply")
        return t
    if not fitting and (preferred or len(offered) == 1) and (narrowed or st.inventory.nodes):
        st.reasons.append(f"GPU type: none of {', '.join(offered) or '(none)'} in {part.name} has nodes that meet "
                          f"{_narrowing(r)}; the request stays untyped (Slurm picks the GPUs)")
        return None
    if not fitting and (preferred or len(offered) == 1):
        t = (preferred or [("", offered[0])])[0][1]  # no node data for the type: the policy's choice stands
        st.reasons.append(f"GPU type {t}: untyped request resolved so typed QOS limits apply")
        return t
    raise st.reject("untyped_gpu", fix, gpus=st.gpus, partition=part.name)


def _narrowing(r: JobRequest) -> str:
    bits = [f"--constraint={r.constraint}" if r.constraint else "",
            "-w " + ",".join(r.nodelist) if r.nodelist else "",
            "-x " + ",".join(r.exclude) if r.exclude else ""]
    return " ".join(b for b in bits if b) or "the request"


def several_types(st: State, part: Partition, types: list[str]) -> None:
    """``--gpus=h100:1,a100:1`` (or ``--gres`` items of several types): each type must exist and be
    offered by the partition; the QOS limits apply to the total; the user's forms are kept."""
    r = st.request
    pol = st.policy
    counts = dict(getattr(r, "gpus_by_type", ()) or getattr(r, "gpus_per_node_by_type", ()) or
                  getattr(r, "gpus_per_task_by_type", ()) or ())
    offered = list(pol.partition_gpu_types(part.name))
    for t in types:
        if pol.gpu_type(t) is None:
            names = [g.name for g in pol.gpu_types]
            raise st.reject("unknown_gpu_type", f"{hint(t, names)}GPU types: {', '.join(names)}", gpu_type=t)
        if t not in offered:
            where = [p.name for p in pol.partitions if t in pol.partition_gpu_types(p.name)]
            raise st.reject("gpu_type_not_in_partition", f"use a partition with {t}: {', '.join(where) or '(none)'}",
                            gpu_type=t, partition=part.name)
    q = pol.qos_named(st.qos)
    if q is not None and q.max_gpus_per_job is not None and st.gpus > q.max_gpus_per_job:
        raise st.reject("too_many_gpus", f"ask for at most {q.max_gpus_per_job} GPUs", gpus=st.gpus, qos=q.name,
                        limit=q.max_gpus_per_job)
    st.gpu_type = None
    st.gres = ",".join(f"gpu:{t}:{counts.get(t, '?')}" for t in types)
    st.reasons.append(f"GPU types {', '.join(types)}: each offered by {part.name}; {st.gpus} GPUs within the QOS")


def whole_gpus(st: State, part: Partition) -> None:
    pol, r = st.policy, st.request
    types = list(dict.fromkeys(t for t in (getattr(r, "gpu_types", ()) or ()) if t))
    if len(types) > 1:
        several_types(st, part, types)
        return
    t = st.gpu_type = _resolve_type(st, part)
    q = pol.qos_named(st.qos)
    if q is not None and q.max_gpus_per_job is not None and st.gpus > q.max_gpus_per_job:
        raise st.reject("too_many_gpus", f"ask for at most {q.max_gpus_per_job} GPUs (--gpus={t}:"
                        f"{q.max_gpus_per_job})", gpus=st.gpus, qos=q.name, limit=q.max_gpus_per_job)
    if q is not None and q.max_gpus_per_user is not None and st.gpus > q.max_gpus_per_user:
        raise st.reject("over_user_cap", f"ask for at most {q.max_gpus_per_user} GPUs", gpus=st.gpus,
                        qos=q.name, limit=q.max_gpus_per_user)
    if q is not None:
        st.reasons.append(f"qos {q.name}: {st.gpus} GPUs within max_gpus_per_job "
                          f"{q.max_gpus_per_job if q.max_gpus_per_job is not None else 'unlimited'}")
    if t is None:  # left untyped (no type's nodes meet -C/-w/-x): every GPU of the partition counts
        caps = [pol.gpu_capacity(part.name, x) for x in pol.partition_gpu_types(part.name)] or [(0, 0)]
        per_node_max, capacity = max(c[0] for c in caps), sum(c[1] for c in caps)
    else:
        per_node_max, capacity = pol.gpu_capacity(part.name, t)
    if st.gpus > capacity:
        raise st.reject("too_big", f"ask for at most {capacity} {t or ''} GPUs", gpus=st.gpus, gpu_type=t or "",
                        partition=part.name, capacity=capacity)
    # -N fixes the node count; else as many as the GPUs need, at least the nodes -w / -n name
    nodes = r.nodes or max(r.node_min or 1, math.ceil(st.gpus / max(per_node_max, 1)))
    st.nodes_needed = nodes
    if r.gpus_per_node is not None and r.gpus is None:
        per = r.gpus_per_node
    elif st.gpus % nodes:
        # sbatch takes it and slurmctld splits the GPUs unevenly over the nodes: so does gpusub (the
        # placement plan warns); refusing it would refuse a job sbatch starts
        per = -(-st.gpus // nodes)
        st.reasons.append(f"{st.gpus} GPUs over {nodes} node(s): Slurm splits them unevenly")
    else:
        per = st.gpus // nodes
    if per > per_node_max:
        raise st.reject("too_big", f"use at most {per_node_max} GPUs per node (add nodes)", gpus=per,
                        gpu_type=t or "", partition=part.name, capacity=per_node_max)
    st.gres = f"gpu:{t}:{per}" if t else f"gpu:{per}"
    st.reasons.append(f"gres {st.gres} on {nodes} node(s)")
    if any(v is not None for v in (r.gpus, r.gpus_per_node, r.gpus_per_task, r.gpus_per_socket, r.ntasks_per_gpu)):
        # the request's own GPU options stay as written (the renderer adds the type to untyped ones):
        # another count form next to them would ask twice, and Slurm lays the GPUs out over the nodes
        st.reasons.append(f"GPU options kept as written, typed {t}" if t else "GPU options kept as written, untyped")
        return
    st.add(f"--gres={st.gres}")  # GPUs the policy chose (the VRAM fit): the request named none
    if r.nodes is None and nodes > 1:
        st.add(f"--nodes={nodes}")



def resolve_gpus(st: State) -> None:
    part = st.partition
    assert part is not None  # place ran
    if st.fraction is not None:
        fraction(st, part)
    elif st.gpus:
        whole_gpus(st, part)
    else:
        st.reasons.append("no GPUs requested: no gres")
