# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu report --autoscale`` on recorded records: tests/cluster/data/sacct-22.05/pending-jobs.json holds
``squeue --json -t all`` of four held GPU jobs in the lab (22.05.8; the document kept to them):

- 522 batch/normal ``--gres=gpu:h100:2``, 523 spot/spot ``--gres=gpu:a100:4`` (submitted 23:49:13),
- 524 batch ``-N 2 --gres=gpu:h100:4`` (NumNodes=2-2: 8 GPUs), 525 batch ``--gpus=3`` (made h100:3 by the
  lab's policy) (submitted 3 s later, 23:49:16: T0);

and the efficiency E per type comes from the report fixture (h100 0.5, a100 0.45; test_report.py).
"""

from __future__ import annotations

from pathlib import Path

from slurm_gpu.cluster.autoscale import autoscale, lines, pending_demand
from slurm_gpu.cluster.report import report
from slurm_gpu.slurm.records import read_jobs
from slurm_gpu.slurm.sacct import sacct_time
from tests.cluster.test_jobstats import policy  # noqa: F401  (the fixture)
from tests.cluster.test_report import rows

DATA = Path(__file__).resolve().parent / "data" / "sacct-22.05"
JOBS = [j.fields for j in read_jobs((DATA / "pending-jobs.json").read_text()).jobs]
T0 = sacct_time(JOBS[-1]["SubmitTime"])  # 2026-12-01T23:49:16 in the lab's time zone (UTC)


def test_pending_demand_by_type(policy):  # noqa: F811
    d = pending_demand(JOBS, T0 + 60, policy)
    assert d["h100"] == {"pending_jobs": 3, "pending_gpus": 2 + 8 + 3, "waiting_over_target": 0}
    # 523 is class scavenger (spot/spot) with target_wait 10s: 63 s waited is over it
    assert d["a100"] == {"pending_jobs": 1, "pending_gpus": 4, "waiting_over_target": 1}
    later = pending_demand(JOBS, T0 + 1801, policy)  # batch has no class: autoscale.target_wait 30m
    assert later["h100"]["waiting_over_target"] == 3


def test_recommendations(policy):  # noqa: F811
    rep = report(rows("22.05"), policy)
    doc = autoscale(JOBS, rep, T0 + 60, policy)
    assert doc["thresholds"] == {"min_waiting_jobs": 0, "scale_down_below": 0.5, "default_target_wait_seconds": 1800}
    assert doc["types"]["a100"]["recommendation"] == "up" and doc["types"]["a100"]["efficiency"] == 0.45
    assert doc["types"]["h100"]["recommendation"] == "hold" and doc["types"]["h100"]["pending_gpus"] == 13
    idle = autoscale([], rep, T0, policy)  # nothing pending: a100's E 0.45 < 0.5 scales down, h100's 0.5 holds
    assert idle["types"]["a100"]["recommendation"] == "down"
    assert idle["types"]["h100"]["recommendation"] == "hold"
    defaults = autoscale([], report(rows("22.05")), T0)  # no policy: scale down below 0.7
    assert {t: v["recommendation"] for t, v in defaults["types"].items()} == {"a100": "down", "h100": "down"}
    text = "\n".join(lines(doc))
    assert "a100" in text and "up: 1 jobs waited longer than their target" in text


def test_no_stats_holds():
    rep = report([r | {"AdminComment": ""} for r in rows("22.05")])
    doc = autoscale([], rep, T0)
    assert all(v["recommendation"] == "hold" and v["efficiency"] is None for v in doc["types"].values())
