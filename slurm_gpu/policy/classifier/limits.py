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
    if getattr(r, "time_unlimited", False):  # -t UNLIMITED / INFINITE / 0: no limit of the job's own
        for v, n in limits:
            raise st.reject("too_long", f"ask for --time={format_time_minutes(v)} or less",
                            time="UNLIMITED", limit=format_time_minutes(v), limit_name=n)
        st.reasons.append("time UNLIMITED: no partition or QOS limit")
        return
    if t is None:
        t = part.default_time_min
        for v, _n in limits:
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
        # Memory and CPUs per GPU are the partition's DefMemPerGPU/DefCpuPerGPU (`slurm-gpu admin emit`
        # writes them from these defaults), so that plain sbatch and gpusub jobs get the same resources:
        # gpusub adds no resource amount of its own.
        if d.mem_per_gpu_mb and r.mem_mb is None and r.mem_per_gpu_mb is None and r.mem_per_cpu_mb is None:
            st.reasons.append(f"memory per GPU: {d.mem_per_gpu_mb} MB, the partition's DefMemPerGPU (policy default)")
        if isinstance(d.cpus_per_gpu, int) and r.cpus_per_task is None and r.cpus_per_gpu is None:
            st.reasons.append(f"CPUs per GPU: {d.cpus_per_gpu}, the partition's DefCpuPerGPU (policy default)")
        elif d.cpus_per_gpu == "topology" and r.cpus_per_task is None and r.cpus_per_gpu is None:
            st.reasons.append("CPUs per GPU: the cores local to each GPU, the partition's DefCpuPerGPU (policy "
                              "default cpus_per_gpu: topology)")
    for opt in c.options:
        st.add(opt)
    if c.checkpoint_required:
        st.add("--requeue")
        st.add(f"--signal=B:{d.ckpt_signal}@{d.signal_lead_time_s}")
        st.reasons.append(f"class {c.name}: checkpointing required: --requeue, SIG{d.ckpt_signal} "
                          f"{d.signal_lead_time_s}s before the end or on preemption")
    if part.preemptible:
        st.warnings.append(f"partition {part.name} is preemptible: the job can be requeued (grace "
                           f"{part.grace_time_s}s, up to {d.max_requeues} requeues); checkpoint on "
                           f"SIG{d.ckpt_signal}/SIGTERM")


def set_time(st: State) -> None:
    assert st.partition is not None
    time_limit(st, st.partition)


def apply_defaults(st: State) -> None:
    assert st.job_class is not None and st.partition is not None
    defaults(st, st.job_class, st.partition)
