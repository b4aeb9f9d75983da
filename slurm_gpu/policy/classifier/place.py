# SPDX-License-Identifier: Apache-2.0
"""Step ``place``: partition (the user's, kept when it exists) and QOS (the user's, kept when allowed)."""

from __future__ import annotations

from dataclasses import replace

from slurm_gpu.policy.classifier.state import State, hint


def place(st: State) -> None:
    r, pol, c = st.request, st.policy, st.job_class
    assert c is not None  # match_class ran
    part = pol.partition(c.partition)
    assert part is not None  # validated: class partitions exist
    if r.partition and r.partition != part.name:
        user = pol.partition(r.partition)
        names = [p.name for p in pol.partitions]
        if user is None:
            raise st.reject("unknown_partition", f"{hint(r.partition, names)}drop --partition (class {c.name} "
                            f"uses {part.name}) or use one of {', '.join(names)}", partition=r.partition)
        st.reasons.append(f"partition {user.name}: kept as requested (class {c.name} would use {part.name})")
        part = user
        if c.qos and part.allowed_qos and c.qos not in part.allowed_qos:
            c = replace(c, qos=None)  # the class's QOS is not allowed there: use the partition's default
    else:
        st.reasons.append(f"partition {part.name}: from class {c.name}")
    st.partition = part
    qname = r.qos or c.qos or part.default_qos
    if r.qos:
        if pol.qos_named(r.qos) is None:
            names = [q.name for q in pol.qos]
            raise st.reject("unknown_qos", f"{hint(r.qos, names)}drop --qos or use one of "
                            f"{', '.join(part.allowed_qos or names)}", qos=r.qos)
        if part.allowed_qos and r.qos not in part.allowed_qos:
            raise st.reject("qos_not_allowed", f"drop --qos or use one of {', '.join(part.allowed_qos)}",
                            qos=r.qos, partition=part.name)
        st.reasons.append(f"qos {r.qos}: kept as requested")
    else:
        st.reasons.append(f"qos {qname or '(Slurm default)'}: " + ("from class" if c.qos else "partition default"))
    st.qos = qname
    if not r.partition or r.partition != part.name:
        st.add(f"--partition={part.name}")
    if qname and r.qos != qname:
        st.add(f"--qos={qname}")


