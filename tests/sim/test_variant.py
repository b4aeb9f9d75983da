# SPDX-License-Identifier: Apache-2.0
"""A policy variant changes the outcome in the direction docs/simulate.md explains ("An Alibaba sample"):
university sends short 1-2 GPU jobs (class debug, partition interactive) to the A100 by default, where
MIG slices are also cut; the variant sends them to the H100s, so GPU fractions (class mig-small) and
debug jobs wait less."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from slurm_gpu.cli.main import cli
from slurm_gpu.policy import load_policy
from slurm_gpu.sim.engine import simulate
from slurm_gpu.sim.params import Params
from slurm_gpu.sim.traces import read_trace

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
UNIVERSITY = DATA / "university.yaml"
VARIANT = DATA / "university-debug-h100.yaml"
SAMPLE = DATA / "alibaba-openb-synthetic.csv"


def test_the_variant_differs_only_in_the_interactive_default_gpu_type() -> None:
    base, var = (yaml.safe_load(p.read_text()) for p in (UNIVERSITY, VARIANT))
    for doc in (base, var):
        doc.pop("name")
        for nt in doc["node_types"]:
            nt["topology"] = Path(nt["topology"]).name
    inter = next(p for p in var["partitions"] if p["name"] == "interactive")
    assert inter["default_gpu_type"] == "h100"
    inter["default_gpu_type"] = "a100"
    assert var == base


def test_debug_jobs_leave_the_a100_to_mig_slices() -> None:
    """The mechanism: the same untyped debug jobs run on a100 under university and on h100 under the variant."""
    trace = read_trace(SAMPLE.read_text().splitlines(), str(SAMPLE))
    untyped = {j.job_id for j in trace.jobs if j.gpu_type is None}
    types = {}
    for path in (UNIVERSITY, VARIANT):
        result = simulate(trace, load_policy(str(path)), Params())
        debug = [j for j in result.jobs if j.job_class == "debug" and j.gpus >= 1 and j.job_id in untyped]
        assert len(debug) > 50
        types[path] = {j.gpu_type for j in debug}
    assert types[UNIVERSITY] == {"a100"} and types[VARIANT] == {"h100"}


def test_fractional_and_debug_jobs_wait_less_under_the_variant(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["simulate", "--policy", str(UNIVERSITY), "--policy", str(VARIANT),
                                   "--trace", str(SAMPLE), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    base = json.loads((tmp_path / "university" / "summary.json").read_text())
    var = json.loads((tmp_path / "university-debug-h100" / "summary.json").read_text())
    # the same jobs run (routing differs only in the GPU type of the debug class)
    assert base["all"]["started"] == var["all"]["started"] and base["rejected"] == var["rejected"]
    for cls in ("mig-small", "debug"):
        b, v = base["classes"][cls]["wait_s"], var["classes"][cls]["wait_s"]
        assert v["p50"] < b["p50"] and v["p95"] < b["p95"] and v["mean"] < b["mean"], (cls, b, v)
    # the figures quoted in docs/simulate.md
    assert (base["classes"]["mig-small"]["wait_s"]["p50"], var["classes"]["mig-small"]["wait_s"]["p50"]) == (624, 21)
    assert (base["classes"]["mig-small"]["wait_s"]["p95"], var["classes"]["mig-small"]["wait_s"]["p95"]) == (8539,
                                                                                                            4920)
    row = next(ln for ln in res.output.splitlines() if ln.startswith("class mig-small: wait p50"))
    assert row.split()[-1] == "-603"
