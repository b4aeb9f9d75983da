# SPDX-License-Identifier: Apache-2.0
"""Steps ``set_time`` (time limit within partition and QOS limits) and ``apply_defaults`` (memory, CPUs,
class options, checkpointing)."""

from __future__ import annotations

from slurm_gpu.policy.classifier.state import State
from slurm_gpu.policy.model import JobClass, Partition
from slurm_gpu.units import format_time_minutes


def time_limit(st: State, part: Partition) -> None:
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
            st.add(f"--time={format_time_minutes(t)}")
            st.reasons.append(f"time {format_time_minutes(t)}: default (no --time given)")
        return
    for v, n in limits:
        if t > v:
            raise st.reject("too_long", f"ask for --time={format_time_minutes(v)} or less",
                            time=format_time_minutes(t), limit=format_time_minutes(v), limit_name=n)
    st.reasons.append(f"time {format_time_minutes(t)}: within " + (", ".join(n for _, n in limits) or "no limit"))


def defaults(st: State, c: JobClass, part: Partition) -> None:
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


def set_time(st: State) -> None:
    assert st.partition is not None
    time_limit(st, st.partition)


def apply_defaults(st: State) -> None:
    assert st.job_class is not None and st.partition is not None
    defaults(st, st.job_class, st.partition)
