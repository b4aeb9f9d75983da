# SPDX-License-Identifier: Apache-2.0
"""Step ``match_class``: the class named with ``--class``, or the first class whose match rules hold."""

from __future__ import annotations

from slurm_gpu.policy.classifier.state import State, hint
from slurm_gpu.policy.model import JobClass


def mismatch(st: State, c: JobClass) -> str | None:
    r, m, pol = st.request, c.match, st.policy
    if m.gpu_fraction is True and st.fraction is None:
        return "needs a GPU fraction"
    if m.gpu_fraction is False and st.fraction is not None:
        return "does not take GPU fractions"
    if m.min_gpus is not None and st.gpus < m.min_gpus:
        return f"{st.gpus} GPUs < min_gpus {m.min_gpus}"
    if m.max_gpus is not None and st.gpus > m.max_gpus:
        return f"{st.gpus} GPUs > max_gpus {m.max_gpus}"
    if m.max_time_min is not None:
        part = pol.partition(c.partition)
        t = r.time_limit_min or (part.default_time_min or part.max_time_min if part else None)
        if t is None or t > m.max_time_min:
            return f"time {t if t is not None else 'unlimited'} min > max_time {m.max_time_min} min"
    if m.array is not None and bool(r.array) != m.array:
        return "needs an array job" if m.array else "does not take array jobs"
    if m.interactive is not None and r.interactive != m.interactive:
        return "needs an interactive session" if m.interactive else "does not take interactive sessions"
    if m.gpu_types and st.gpu_type and st.gpu_type not in m.gpu_types:
        return f"GPU type {st.gpu_type} not in {', '.join(m.gpu_types)}"
    if m.accounts and r.account not in m.accounts:
        return f"account {r.account or '(none)'} not in {', '.join(m.accounts)}"
    if m.users and r.user not in m.users:
        return f"user {r.user or '(unknown)'} not in {', '.join(m.users)}"
    if m.groups and not set(r.groups) & set(m.groups):
        return f"groups not in {', '.join(m.groups)}"
    if st.gpus and st.fraction is None and st.gpu_type and st.gpu_type not in pol.partition_gpu_types(c.partition):
        return f"partition {c.partition} has no {st.gpu_type} GPUs"
    return None



def _choose(st: State) -> JobClass:
    r, pol = st.request, st.policy
    names = [c.name for c in pol.classes]
    if r.job_class:
        c = pol.job_class(r.job_class)
        if c is None:
            raise st.reject("unknown_class", f"{hint(r.job_class, names)}classes: {', '.join(names)}",
                            job_class=r.job_class)
        why = mismatch(st, c)
        if why:
            raise st.reject("class_not_allowed", f"drop --class {c.name} or change the request ({why})",
                            job_class=c.name, why=why)
        st.reasons.append(f"class {c.name}: chosen with --class")
        return c
    matching: list[JobClass] = []
    for c in pol.classes:
        if c.match.explicit and not (r.partition and r.partition == c.partition):
            st.reasons.append(f"class {c.name}: skipped (only with --class {c.name})")
            continue
        why = mismatch(st, c)
        st.reasons.append(f"class {c.name}: " + (f"no ({why})" if why else "matches"))
        if not why:
            matching.append(c)
            if not r.partition:
                break
    if not matching:
        opt_in = [c.name for c in pol.classes if c.match.explicit]
        fix = "change the request to fit a class" + (f", or opt in with --class {'|'.join(opt_in)}" if opt_in else "")
        raise st.reject("no_class", fix)
    chosen = next((c for c in matching if c.partition == r.partition), matching[0])
    if r.partition and chosen.partition == r.partition and chosen is not matching[0]:
        st.reasons.append(f"class {chosen.name}: preferred because it maps to the requested partition")
    return chosen




def match_class(st: State) -> None:
    st.job_class = _choose(st)
