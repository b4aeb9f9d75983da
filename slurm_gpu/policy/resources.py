# SPDX-License-Identifier: Apache-2.0
"""Classifier steps for resources: GPU fraction (MIG/MPS), typed whole GPUs, time, defaults."""

from __future__ import annotations

import math
import re

from slurm_gpu.policy.classifier import _hint, _State
from slurm_gpu.policy.durations import format_duration_min
from slurm_gpu.policy.model import JobClass, Partition

MIG_RE = re.compile(r"^([1-7])g\.(\d+)gb$")  # same as fields.MIG_RE; kept here so classify never imports yaml


def _mig_candidates(st: _State, part: Partition) -> list[tuple[int, int, str, str]]:
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
            m = MIG_RE.match(prof)
            if m:
                out.append((int(m.group(1)), int(m.group(2)), t, prof))
    return sorted(out)


def fraction(st: _State, part: Partition) -> None:
    iso, f, r = st.policy.isolation, st.fraction or 0.0, st.request
    mode = iso.fraction_mode
    if mode == "reject":
        raise st.reject("fraction", "ask for a whole GPU (--gpus=<type>:1)", fraction=f,
                        why="this site does not share GPUs")
    use_mig = mode == "mig" or (mode == "mig-then-mps" and f <= iso.mig_max_fraction) or r.mig_profile
    if use_mig:
        cands = _mig_candidates(st, part)
        if r.mig_profile:
            cands = [c for c in cands if c[3] == r.mig_profile]
        fits = [c for c in cands if c[0] / 7 >= f - 1e-9]
        if fits:
            slices, _, t, prof = fits[0]
            st.gpu_type, st.gpus = t, 1
            st._gres = f"gpu:{t}_{prof}:1"  # type: ignore[attr-defined]  # Slurm MIG type: a100_3g.40gb
            st.add(f"--gres={st._gres}")  # type: ignore[attr-defined]
            st.reasons.append(f"GPU fraction {f:g} -> MIG slice {prof} on {t} ({slices}/7 of the GPU)")
            return
        if mode == "mig" or r.mig_profile:
            allowed = sorted({c[3] for c in cands})
            raise st.reject("fraction", f"use one of the MIG profiles {', '.join(allowed) or '(none)'} "
                            f"in partition {part.name}", fraction=f,
                            why=f"no allowed MIG profile in partition {part.name} covers it")
    pct = max(iso.mps_min_share_pct, math.ceil(f * 100 - 1e-9))
    if pct > iso.mps_max_share_pct:
        raise st.reject("fraction", f"ask for at most {iso.mps_max_share_pct / 100:g} of a GPU, or a whole GPU",
                        fraction=f, why=f"MPS shares are capped at {iso.mps_max_share_pct}%")
    st.gpus = 0
    st._gres = f"mps:{pct}"  # type: ignore[attr-defined]  # 100 mps units per GPU
    st.add(f"--gres={st._gres}")  # type: ignore[attr-defined]
    st.reasons.append(f"GPU fraction {f:g} -> MPS share of {pct}%")


def _resolve_type(st: _State, part: Partition) -> str:
    pol, d = st.policy, st.policy.defaults
    offered = list(pol.partition_gpu_types(part.name))
    if st.gpu_type:
        if pol.gpu_type(st.gpu_type) is None:
            names = [g.name for g in pol.gpu_types]
            raise st.reject("unknown_gpu_type", f"{_hint(st.gpu_type, names)}GPU types: {', '.join(names)}",
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
    for source, t in (("partition default", part.default_gpu_type), ("policy default", d.gpu_type),
                      ("only type in partition", offered[0] if len(offered) == 1 else None)):
        if t and t in offered:
            st.reasons.append(f"GPU type {t}: untyped request resolved ({source}) so typed QOS limits apply")
            return t
    raise st.reject("untyped_gpu", fix, gpus=st.gpus, partition=part.name)


def whole_gpus(st: _State, part: Partition) -> None:
    pol, r = st.policy, st.request
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
    per_node_max, capacity = pol.gpu_capacity(part.name, t)
    if st.gpus > capacity:
        raise st.reject("too_big", f"ask for at most {capacity} {t} GPUs", gpus=st.gpus, gpu_type=t,
                        partition=part.name, capacity=capacity)
    nodes = r.nodes or max(1, math.ceil(st.gpus / per_node_max))
    if r.gpus_per_node is not None and r.gpus is None:
        per = r.gpus_per_node
    elif st.gpus % nodes:
        lo = (st.gpus // nodes) * nodes
        hint = f"ask for {lo or nodes} or {lo + nodes} GPUs" if lo else f"ask for {nodes} GPUs"
        raise st.reject("uneven_gpus", hint, gpus=st.gpus, nodes=nodes, per_node=per_node_max)
    else:
        per = st.gpus // nodes
    if per > per_node_max:
        raise st.reject("too_big", f"use at most {per_node_max} GPUs per node (add nodes)", gpus=per,
                        gpu_type=t, partition=part.name, capacity=per_node_max)
    st._gres = f"gpu:{t}:{per}"  # type: ignore[attr-defined]
    st.reasons.append(f"gres {st._gres} on {nodes} node(s)")  # type: ignore[attr-defined]
    if r.gpus_per_task is not None and r.gpus is None and r.gpus_per_node is None:
        st.add(f"--gpus-per-task={t}:{r.gpus_per_task}")  # keep the user's per-task form, typed
    elif r.gpus_per_socket is not None and r.gpus is None and r.gpus_per_node is None:
        st.add(f"--gpus-per-socket={t}:{r.gpus_per_socket}")
    else:
        st.add(f"--gres={st._gres}")  # type: ignore[attr-defined]  # replaces --gpus/--gpus-per-node/--gres
    if r.nodes is None and nodes > 1:
        st.add(f"--nodes={nodes}")


def time_limit(st: _State, part: Partition) -> None:
    r, q = st.request, st.policy.qos_named(st.qos)
    limits = [(v, n) for v, n in ((part.max_time_min, f"partition {part.name}"),
                                  (q.max_wall_min if q else None, f"QOS {st.qos}")) if v is not None]
    t = r.time_limit_min
    if t is None:
        t = part.default_time_min
        for v, n in limits:
            if t is None or t > v:
                t = v
        if t is not None:
            st.add(f"--time={format_duration_min(t)}")
            st.reasons.append(f"time {format_duration_min(t)}: default (no --time given)")
        return
    for v, n in limits:
        if t > v:
            raise st.reject("too_long", f"ask for --time={format_duration_min(v)} or less",
                            time=format_duration_min(t), limit=format_duration_min(v), limit_name=n)
    st.reasons.append(f"time {format_duration_min(t)}: within " + (", ".join(n for _, n in limits) or "no limit"))


def defaults(st: _State, c: JobClass, part: Partition) -> None:
    r, d = st.request, st.policy.defaults
    if st.gpus and st.fraction is None:
        if d.mem_per_gpu_mb and r.mem_mb is None and r.mem_per_gpu_mb is None and r.mem_per_cpu_mb is None:
            mb = d.mem_per_gpu_mb
            st.add(f"--mem-per-gpu={mb // 1024}G" if mb % 1024 == 0 else f"--mem-per-gpu={mb}M")
        if isinstance(d.cpus_per_gpu, int) and r.cpus_per_task is None and r.cpus_per_gpu is None:
            # Not added as --cpus-per-gpu: the binding planner turns it into --cpus-per-task with
            # --ntasks-per-socket, and slurmctld (22.05) finds no node for --cpus-per-gpu next to that.
            st.reasons.append(f"CPUs per GPU: {d.cpus_per_gpu} (policy default, capped by the local cores; "
                              "binding planner)")
        elif d.cpus_per_gpu == "topology":
            st.reasons.append("CPUs per GPU: from the node topology (binding planner)")
    for opt in c.options:
        st.add(opt)
    if c.checkpoint_required:
        st.add("--requeue")
        st.add(f"--signal=B:USR1@{d.signal_lead_time_s}")
        st.reasons.append(f"class {c.name}: checkpointing required: --requeue, SIGUSR1 "
                          f"{d.signal_lead_time_s}s before the end or on preemption")
    if part.preemptible:
        st.warnings.append(f"partition {part.name} is preemptible: the job can be requeued (grace "
                           f"{part.grace_time_s}s, up to {d.max_requeues} requeues); checkpoint on SIGUSR1/SIGTERM")
