# SPDX-License-Identifier: Apache-2.0
"""``--sweep``, ``--workload`` and the new simulator options through the CLI; the report's fragmentation,
fairness and cost figures on hand-made results."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurm_gpu.cli.main import cli
from slurm_gpu.sim.engine import Result
from slurm_gpu.sim.params import SimJob
from slurm_gpu.sim.report import fairness, fragmentation, jain, summary
from slurm_gpu.sim.settings import SettingError, parse_sweep

TINY = str(Path(__file__).resolve().parent / "data" / "tiny.yaml")
# test_schedules' QUEUE with d's limit 15m: with bf_window 5m c's reservation (at 700) is beyond the window
# and d backfills at 100 (waits a 0, b 90, d 70, c 130: p95 130); with 1440m d waits for c (d 150: p95 150)
QUEUE = """job_id,user,gpu_num,node_num,submit_time,duration,time_limit
a,u,8,2,0,100,10
b,u,4,1,10,50,10
c,u,8,2,20,30,10
d,u,4,1,30,50,15
"""


def invoke(tmp_path: Path, *args: str) -> tuple[int, str]:
    (tmp_path / "t.csv").write_text(QUEUE)
    res = CliRunner().invoke(cli, ["simulate", "--policy", TINY, "--out", str(tmp_path / "out"), *args])
    return res.exit_code, res.output


def test_sweep_writes_one_row_per_value(tmp_path: Path) -> None:
    code, out = invoke(tmp_path, "--trace", str(tmp_path / "t.csv"), "--bf-interval", "1s",
                       "--sweep", "bf_window=5,1440")
    assert code == 0, out
    rows = list(csv.DictReader((tmp_path / "out" / "sweep.csv").read_text().splitlines()))
    assert [(r["param"], r["value"], r["wait_p95_s"]) for r in rows] == [
        ("bf_window", "5", "130.0"), ("bf_window", "1440", "150.0")]
    jobs = list(csv.DictReader((tmp_path / "out" / "bf_window=5" / "jobs.csv").read_text().splitlines()))
    assert {r["job_id"]: r["start_time"] for r in jobs}["d"] == "100"
    assert "wait_p95_s" in out.splitlines()[0] and len(out.splitlines()) == 3


def test_sweep_over_several_policies_and_a_choice(tmp_path: Path) -> None:
    code, out = invoke(tmp_path, "--trace", str(tmp_path / "t.csv"), "--policy", TINY,
                       "--sweep", "allocator=priority,drf")
    assert code == 0, out
    rows = list(csv.DictReader((tmp_path / "out" / "sweep.csv").read_text().splitlines()))
    assert [(r["value"], r["policy"]) for r in rows] == [
        ("priority", "tiny"), ("priority", "tiny'"), ("drf", "tiny"), ("drf", "tiny'")]


@pytest.mark.parametrize("args", [
    ["--sweep", "bf_window"], ["--sweep", "nope=1,2"], ["--sweep", "bf_window=abc"], ["--sweep", "fairshare=x"],
    ["--sweep", "bf_max_job_test=1,,2"], ["--shares", "A"], ["--billing-weights", "gpu=1"]])
def test_bad_options_are_usage_errors(tmp_path: Path, args: list[str]) -> None:
    code, out = invoke(tmp_path, "--trace", str(tmp_path / "t.csv"), *args)
    assert code == 2 and "Traceback" not in out


def test_trace_or_workload(tmp_path: Path) -> None:
    assert invoke(tmp_path)[0] == 2
    assert invoke(tmp_path, "--trace", str(tmp_path / "t.csv"), "--workload", "split")[0] == 2


def test_workload_is_generated_and_simulated(tmp_path: Path) -> None:
    code, out = invoke(tmp_path, "--workload", "split", "--jobs", "80", "--seed", "3",
                       "--fairshare", "fair-tree", "--fairshare-weight", "100000", "--shares", "honest=1,splitter=1")
    assert code == 0, out
    lines = (tmp_path / "out" / "workload-split.csv").read_text().splitlines()
    assert len(lines) == 81
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert s["all"]["jobs"] == 80 and s["params"]["fairshare"] == "fair-tree"
    assert set(s["fairness"]["accounts"]) == {"honest", "splitter"}
    assert s["fairness"]["accounts"]["honest"]["entitled"] == 0.5


def test_parse_sweep() -> None:
    assert parse_sweep("bf_window=60,1440") == ("bf_window", "bf_window_s", [("60", 3600), ("1440", 86400)])
    assert parse_sweep("bf_interval=30,2m")[2] == [("30", 30), ("2m", 120)]
    assert parse_sweep("weight_age=0,1000")[1:] == ("weight_age", [("0", 0), ("1000", 1000)])
    assert parse_sweep("max_tres=true,false")[2] == [("true", True), ("false", False)]
    with pytest.raises(SettingError):
        parse_sweep("max_requeues=1")  # not a parameter of the simulator


def job(account: str, gpu_s: float, lost: float = 0.0, per_node: int = 1) -> SimJob:
    j = SimJob(0, account, 0, 10, None)
    j.account, j.gpu_s, j.lost_gpu_s, j.per_node, j.ran_type, j.job_class = account, gpu_s, lost, per_node, "g", "c"
    j.first_start, j.end = 0, 10
    return j


def test_fragmentation_fairness_and_cost_by_hand() -> None:
    # samples (index = free GPUs, 4-GPU nodes): at 0 one node 1 free + one 4 free -> of 5 free, 1 on a node
    # with < 4 free: 0.2; k=1: 0 (no node has < 1 free GPU free). At 100 nothing free: 0; at 300 (the end) 0.
    # Time-weighted: 0.2 x 100/300. Job mix (one job of 4 per node, one of 1): (0.2 + 0)/2 at 0.
    jobs = (job("A", 7200.0, 3600.0, per_node=4), job("B", 2400.0))
    samples = ((0, 3, (0, 1, 0, 0, 1)), (100, 8, (2, 0, 0, 0, 0)), (300, 0, (0, 0, 0, 0, 2)))
    result = Result(jobs, (), 0, 8, 0, 300, 0, samples, (("g", 2.0),), "EUR", (("A", 0.5), ("B", 0.5)))
    frag = fragmentation(result)
    assert frag["mean_k_node"] == round(0.2 / 3, 4) and frag["mean_job_mix"] == round(0.1 / 3, 4)
    assert frag["max_k_node"] == 0.2 and frag["series"][0] == [0, 3, 0.2, 0.1]
    # used 7200 : 2400 = 0.75 : 0.25 against 0.5 each: ratios 1.5, 0.5 -> Jain 2^2 / (2 x 2.5) = 0.8
    fair = fairness(result)
    assert fair["jain"] == 0.8 and fair["accounts"]["A"] == {"entitled": 0.5, "used": 0.75, "gpu_hours": 2.0}
    assert jain([1.0, 1.0]) == 1.0 and jain([1.0, 0.0]) == 0.5 and jain([]) is None
    # cost: 2 EUR x (2 + 2/3) GPU-h = 5.3333; effective GPU-h: 1 + 2/3 -> 3.2 per effective GPU-hour
    s = summary(result, "p")
    assert s["all"]["cost"] == 5.3333 and s["all"]["cost_per_effective_gpu_hour"] == 3.2
    assert s["currency"] == "EUR" and s["all"]["effective_gpu_hours"] == round((7200 - 3600 + 2400) / 3600, 3)
