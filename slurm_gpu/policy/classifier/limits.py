# SPDX-License-Identifier: Apache-2.0
"""Steps ``set_time`` (time limit within partition and QOS limits) and ``apply_defaults`` (memory, CPUs,
class options, checkpointing)."""

from __future__ import annotations

from slurm_gpu.digits import is_digits
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
    locality(st, c, part)
    if c.checkpoint_required:
        st.add("--requeue")
        st.add(f"--signal=B:{d.ckpt_signal}@{d.signal_lead_time_s}")
        st.reasons.append(f"class {c.name}: checkpointing required: --requeue, SIG{d.ckpt_signal} "
                          f"{d.signal_lead_time_s}s before the end or on preemption")
    if part.preemptible:
        st.warnings.append(f"partition {part.name} is preemptible: the job can be requeued (grace "
                           f"{part.grace_time_s}s, up to {d.max_requeues} requeues); checkpoint on "
                           f"SIG{d.ckpt_signal}/SIGTERM")


def parse_switches(text: str) -> tuple[int, int | None]:
    """A class's ``switches`` (sbatch's --switches): ``COUNT[@MAX-WAIT]`` -> (count, wait in seconds or None,
    Slurm's max_switch_wait). ValueError when it is not that."""
    from slurm_gpu.units import parse_time_seconds

    count, at, wait = text.strip().partition("@")
    if not is_digits(count) or not 1 <= int(count) <= 1024 or (at and not wait):
        raise ValueError(text)
    return int(count), parse_time_seconds(wait) if at else None


def _largest_unit(units: tuple[tuple[str, frozenset[str]], ...], nodes: tuple[str, ...]) -> tuple[str, int]:
    """The fabric unit (leaf switch or block) holding most of ``nodes``, and how many it holds."""
    best = ("", 0)
    for name, members in units:
        held = sum(1 for n in nodes if n in members)
        if held > best[1]:
            best = (name, held)
    return best


def locality(st: State, c: JobClass, part: Partition) -> None:
    """The class's network locality for a multi-node job, by the plugin the fabric says the cluster runs:
    ``--switches=COUNT@WAIT`` (topology/tree: one leaf switch) or ``--segment=NODES`` (topology/block: one
    block), added only where it cannot change the job's shape or make it
    unschedulable: a fixed node count of 2 or more (-N N, no range), no -w, nothing of the user's own
    (--switches, --segment, --spread-job), and a leaf switch (block) of the partition that holds that many
    of its nodes; a job larger than any is never confined."""
    fab = st.policy.fabric
    if not ((c.switches and fab.plugin == "tree") or (c.segment and fab.plugin == "block")):
        return
    r = st.request
    n = r.nodes or 0  # -N's minimum: the job's node count when no range is given
    why = ""
    if r.locality_given:
        why = "the job gives its own --switches/--segment/--spread-job"
    elif n < 2:
        why = "not a multi-node job with -N"
    elif r.nodes_max is not None and r.nodes_max != n:
        why = f"-N {n}-{r.nodes_max}: Slurm chooses the node count"
    elif r.nodelist:
        why = "-w names the nodes"
    if why:
        st.reasons.append(f"locality: none ({why})")
        return
    members = tuple(n_ for n_ in st.policy.partition_nodes(part.name) if n_ not in r.exclude)
    if fab.plugin == "block":
        name, held = _largest_unit(tuple((b.name, frozenset(b.nodes)) for b in fab.blocks), members)
        if held >= n:
            st.add(f"--segment={n}")
            st.reasons.append(f"locality: --segment={n}: the {n} nodes in one block (block {name} holds {held} "
                              f"nodes of partition {part.name}); it waits for one, without a time bound "
                              "(--segment has none)")
            return
        st.reasons.append(f"locality: no --segment: {n} nodes exceed every block of partition {part.name} "
                          f"(largest: {held})")
        return
    if c.switches:
        count, wait = parse_switches(c.switches)
        name, held = _largest_unit(tuple((s.name, frozenset(s.nodes)) for s in fab.leaves()), members)
        if count == 1 and held < n:
            st.reasons.append(f"locality: no --switches: {n} nodes exceed every leaf switch of partition "
                              f"{part.name} (largest: {held})")
            return
        if not fab.leaves():
            st.reasons.append("locality: no --switches: the policy's fabric names no leaf switch")
            return
        st.add(f"--switches={c.switches}")
        bound = f"waits at most {format_time_minutes(-(-wait // 60))} for it, then starts across switches" \
            if wait is not None else "waits up to Slurm's max_switch_wait for it"
        st.reasons.append(f"locality: --switches={c.switches}: the {n} nodes under at most {count} leaf switch"
                          f"{'es' if count > 1 else ''} (e.g. {name}, {held} nodes); {bound}")


def set_time(st: State) -> None:
    assert st.partition is not None
    time_limit(st, st.partition)


def apply_defaults(st: State) -> None:
    assert st.job_class is not None and st.partition is not None
    defaults(st, st.job_class, st.partition)
