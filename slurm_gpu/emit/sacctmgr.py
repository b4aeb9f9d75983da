# SPDX-License-Identifier: Apache-2.0
"""The policy's QOS as ``sacctmgr -i`` argv lists (without the leading ``sacctmgr -i``). Pure.

Two stages, because the limits name the ``gres/gpu`` TRES, which slurmdbd only knows once slurmctld
(``AccountingStorageTRES=gres/gpu,...``) has registered: create the QOS names first, set the limits
after slurmctld is up.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from slurm_gpu.emit.slurm_conf import slurm_time
from slurm_gpu.policy.model import Qos


def qos_settings(q: Qos) -> list[str]:
    s = [f"Priority={q.priority}"]
    if q.max_gpus_per_job is not None:
        s.append(f"MaxTRESPerJob=gres/gpu={q.max_gpus_per_job}")
    if q.max_gpus_per_user is not None:
        s.append(f"MaxTRESPerUser=gres/gpu={q.max_gpus_per_user}")
    if q.max_wall_min is not None:
        s.append(f"MaxWall={slurm_time(q.max_wall_min)}")
    if q.preempts:
        s.append("Preempt=" + ",".join(q.preempts))
    if q.preempt_mode:
        s.append(f"PreemptMode={q.preempt_mode}")
    return s


def qos_add_commands(qos: Sequence[Qos]) -> list[list[str]]:
    """``add qos NAME`` for each QOS but ``normal`` (slurmdbd creates that one itself)."""
    return [["add", "qos", q.name] for q in qos if q.name != "normal"]


def qos_limit_commands(qos: Sequence[Qos]) -> list[list[str]]:
    """``modify qos where name=NAME set ...``: priority, GPU limits, wall time, preemption."""
    return [["modify", "qos", "where", f"name={q.name}", "set", *qos_settings(q)] for q in qos]


def script(commands: Sequence[Sequence[str]]) -> str:
    """Shell lines ``sacctmgr -i ...`` (each word quoted where the shell needs it)."""
    return "".join("sacctmgr -i " + shlex.join(c) + "\n" for c in commands)


__all__ = ["qos_settings", "qos_add_commands", "qos_limit_commands", "script"]
