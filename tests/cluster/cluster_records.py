# SPDX-License-Identifier: Apache-2.0
"""Records for the cluster tests: the lab's real captures (data/lab-22.05 and data/lab-24.11, Slurm 22.05.8
and 24.11.5: ``scontrol show node -d -o``, ``squeue --json -t all`` (24.11: ``--json=v0.0.42``, kept to the
scenario's jobs) and ``scontrol show partition -o``, with four running jobs holding known GPUs, one pending
and two finished: the jobs of /tmp/rec-scenario.sh in docs/records.md); nodes of other shapes made from the
real h100n1 line by replacing only its fields, and jobs made from the real pending job of the 22.05 capture
by replacing only its fields."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"


def lab_texts(release: str = "22.05") -> dict[str, str]:
    d = DATA / f"lab-{release}"
    return {name: (d / name).read_text(encoding="utf-8") for name in ("nodes.txt", "jobs.json", "partitions.txt",
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


_DOC = json.loads((DATA / "lab-22.05" / "jobs.json").read_text(encoding="utf-8"))
_PENDING = next(j for j in _DOC["jobs"] if j["job_state"] == "PENDING")  # squeue --json of a real pending job
_TRES_KEYS = {"TresPerNode": "tres_per_node", "TresPerJob": "tres_per_job", "TresPerTask": "tres_per_task"}


def job_line(job_id: int, user: str, state: str, node: str | None, gres_held: str | None,
             tres_per: str, num_nodes: int | None = 1, max_nodes: int = 0,
             more: tuple[tuple[str, str], ...] = ()) -> dict[str, Any]:
    """A job of squeue's JSON (22.05's openapi/v0.0.38 shape) shaped like the lab's, with the fields the
    cluster view reads: ``tres_per`` as scontrol spells it (``TresPerNode=gres:gpu:h100:2``); on ``node``
    it holds ``gres_held`` (``gpu:h100:2(IDX:0-1)``), and on each of ``more``'s (node, gres) too."""
    job = copy.deepcopy(_PENDING)
    key, _, value = tres_per.partition("=")
    job.update(job_id=job_id, user_name=user, job_state=state, partition="batch", node_count=num_nodes,
               max_nodes=max_nodes, tres_per_node="", tres_per_job="", tres_per_task="", name="wrap")
    job[_TRES_KEYS[key]] = value
    if node and gres_held is not None:
        held = ((node, gres_held), *more)
        job.update(nodes=",".join(n for n, _ in held), gres_detail=[g for _, g in held],
                   job_resources={"nodes": job["nodes"], "allocated_nodes": [
                       {"nodename": n, "sockets": {"0": {"cores": {str(c): "allocated" for c in range(4)}}}}
                       for n, _ in held]})
    return job


def jobs_json(*jobs: dict[str, Any]) -> str:
    """squeue's JSON document of these jobs (the 22.05 capture's meta)."""
    return json.dumps({"meta": _DOC["meta"], "errors": [], "jobs": list(jobs)})
