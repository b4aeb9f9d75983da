# SPDX-License-Identifier: Apache-2.0
"""From Slurm's record texts to the cluster view (pure): parse, summarise, and render.

``scontrol show node -d -o``, ``scontrol show job -d -o``, ``scontrol show partition -o`` and gres.conf
(optional) in; the ``--json`` document (:func:`slurm_gpu.cluster.model.summarise`) and the picture
(:func:`slurm_gpu.cluster.picture.render`) out.
"""

from __future__ import annotations

from slurm_gpu.cluster.model import Summary, summarise
from slurm_gpu.cluster.picture import MAX_ROWS, gpu_sockets, render
from slurm_gpu.placement.locality import parse_gres_conf
from slurm_gpu.plain import NamedTuple
from slurm_gpu.slurm.records import (
    JobGres,
    NodeRecord,
    parse_job_gres,
    parse_node_records,
    partition_gpu_defaults,
)


class ClusterView(NamedTuple):
    nodes: list[NodeRecord]
    jobs: list[JobGres]
    summary: Summary
    sockets: dict[str, dict[int, int]]


def from_texts(nodes_text: str, jobs_text: str = "", partitions_text: str = "",
               gres_conf_text: str | None = None) -> ClusterView:
    nodes = parse_node_records(nodes_text)
    jobs = parse_job_gres(jobs_text)
    summary = summarise(nodes, jobs, partition_gpu_defaults(partitions_text))
    sockets = gpu_sockets(parse_gres_conf(gres_conf_text), nodes) if gres_conf_text else {}
    return ClusterView(nodes, jobs, summary, sockets)


def picture(view: ClusterView, max_rows: int = MAX_ROWS) -> str:
    return render(view.nodes, view.jobs, view.summary, view.sockets, max_rows=max_rows)


__all__ = ["ClusterView", "from_texts", "picture"]
