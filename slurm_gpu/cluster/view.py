# SPDX-License-Identifier: Apache-2.0
"""From Slurm's records to the cluster view (pure): parse, summarise, and render.

``scontrol show node -d -o``, squeue's JSON of the jobs (``squeue --json -t all``, docs/records.md),
``scontrol show partition -o`` and gres.conf (optional) in; the ``--json`` document
(:func:`slurm_gpu.cluster.model.summarise`) and the picture (:func:`slurm_gpu.cluster.picture.render`) out.
A node or job record that cannot be read is left out and named in ``problems``; the rest is shown.
"""

from __future__ import annotations

from slurm_gpu.cluster.model import Summary, summarise
from slurm_gpu.cluster.picture import MAX_ROWS, gpu_sockets, render
from slurm_gpu.placement.locality import parse_gres_conf
from slurm_gpu.plain import NamedTuple
from slurm_gpu.slurm.records import (
    JOB_GRES_KEYS,
    JobGres,
    NodeRecord,
    job_gres,
    partition_gpu_defaults,
    read_jobs,
    read_node_records,
)


class ClusterView(NamedTuple):
    nodes: list[NodeRecord]
    jobs: list[JobGres]
    summary: Summary
    sockets: dict[str, dict[int, int]]
    problems: tuple[str, ...] = ()  # records left out (one line each)


def jobs_of(jobs_json: str) -> tuple[list[JobGres], tuple[str, ...]]:
    """squeue's JSON -> the cluster view's jobs; a job that cannot be read is left out and named."""
    if not jobs_json.strip():
        return [], ()
    read = read_jobs(jobs_json, keys=JOB_GRES_KEYS)
    out, problems = [], list(read.problems)
    for job in read.jobs:
        try:
            out.append(job_gres(job))
        except (ValueError, OverflowError, RecursionError) as exc:
            problems.append(f"job {job.job_id}: left out ({type(exc).__name__}: {str(exc)[:120]})")
    return out, tuple(problems)


def from_texts(nodes_text: str, jobs_json: str = "", partitions_text: str = "",
               gres_conf_text: str | None = None, topology_text: str = "") -> ClusterView:
    from slurm_gpu.slurm.topology_show import parse_show_topology

    node_read = read_node_records(nodes_text)
    nodes = list(node_read.nodes)
    jobs, job_problems = jobs_of(jobs_json)
    summary = summarise(nodes, jobs, partition_gpu_defaults(partitions_text), parse_show_topology(topology_text))
    sockets = gpu_sockets(parse_gres_conf(gres_conf_text), nodes) if gres_conf_text else {}
    return ClusterView(nodes, jobs, summary, sockets, node_read.problems + job_problems)


def picture(view: ClusterView, max_rows: int = MAX_ROWS) -> str:
    return render(view.nodes, view.jobs, view.summary, view.sockets, max_rows=max_rows)


__all__ = ["ClusterView", "from_texts", "picture"]
