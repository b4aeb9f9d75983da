# SPDX-License-Identifier: Apache-2.0
"""Record texts for the cluster tests: the lab's real captures (data/lab-22.05: ``scontrol show node -d -o``,
``show job -d -o`` and ``show partition -o`` of Slurm 22.05.8 with four jobs holding known GPUs;
data/lab-24.11: the same with 24.11's spellings, derived by hand: ``TresPer*=gres/gpu:…``, ``ReqTRES=`` +
``AllocTRES=`` instead of ``TRES=``), and nodes of other shapes made from the real h100n1 line by
replacing only its fields."""

from __future__ import annotations

import re
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"


def lab_texts(release: str = "22.05") -> dict[str, str]:
    d = DATA / f"lab-{release}"
    return {name: (d / name).read_text(encoding="utf-8") for name in ("nodes.txt", "jobs.txt", "partitions.txt",
                                                                        "gres.conf")}


TEMPLATE = (DATA / "lab-22.05" / "nodes.txt").read_text(encoding="utf-8").splitlines()[1]  # h100n1


def node_line(name: str, *, state: str = "IDLE", gres: str = "gpu:h100:8(S:0-1)", used: str = "gpu:h100:0(IDX:N/A)",
              cpus: int = 32, cpu_alloc: int = 0, mem: int = 512000, mem_alloc: int = 0,
              partitions: str = "batch", reason: str | None = None) -> str:
    """The real h100n1 line with these fields replaced (Reason=, when given, as scontrol prints it)."""
    fields = {"NodeName": name, "State": state, "Gres": gres, "GresUsed": used, "CPUTot": str(cpus),
              "CPUEfctv": str(cpus), "CPUAlloc": str(cpu_alloc), "RealMemory": str(mem),
              "AllocMem": str(mem_alloc), "Partitions": partitions}
    line = TEMPLATE
    for key, value in fields.items():
        line, n = re.subn(rf"(^| ){key}=\S*", lambda m, k=key, v=value: f"{m.group(1)}{k}={v}", line)
        assert n == 1, key
    if reason:
        line = line.replace(" CapWatts=", f" Reason={reason} CapWatts=")
    return line


def job_line(job_id: int, user: str, state: str, node: str | None, gres_held: str | None,
             tres_per: str, num_nodes: int = 1) -> str:
    """A ``scontrol show job -d -o`` line shaped like the lab's (fields the cluster view reads)."""
    held = f"   Nodes={node} CPU_IDs=0-3 Mem=61440 GRES={gres_held}" if node and gres_held is not None else ""
    return (f"JobId={job_id} JobName=wrap UserId={user}(1001) GroupId={user}(1001) MCS_label=N/A Priority=1 "
            f"Account=lab QOS=normal JobState={state} Reason=None Partition=batch NodeList={node or ''} "
            f"NumNodes={num_nodes} NumCPUs=4 NumTasks=1 CPUs/Task=1 TRES=cpu=4,mem=60G,node=1{held} "
            f"MinCPUsNode=1 Features=(null) Power= {tres_per} ")
