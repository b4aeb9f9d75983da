# SPDX-License-Identifier: Apache-2.0
"""Alibaba's pod lists (cluster-trace-gpu-v2023 "openb"): columns, fractions routed by the policy's
isolation, one-line errors, streaming; the checked-in synthetic sample and its published share."""

from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurm_gpu.cli.main import cli
from slurm_gpu.policy import load_policy
from slurm_gpu.sim.alibaba import FRACTIONAL_SHARE, read_alibaba, synthetic
from slurm_gpu.sim.routing import Router
from slurm_gpu.sim.traces import MAX_LINE, TraceError, detect_format, read_trace

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
SAMPLE = DATA / "alibaba-openb-synthetic.csv"
UNIVERSITY = ROOT / "examples" / "policies" / "university.yaml"
HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
# rows in the published format (values like the openb default list's first rows)
PODS = HEADER + """
openb-pod-0017,88000,327680,8,1000,,Burstable,Succeeded,9437497,10769854,9437497
openb-pod-0022,4000,15258,1,220,,BE,Running,9679175,9973826,9679175
openb-pod-0035,16000,32768,1,1000,V100M16|V100M32,LS,Running,9967058,9968575,9967063
openb-pod-0061,11908,47104,1,1000,,BE,Pending,10001278,10001403,
openb-pod-0005,20000,65536,0,0,,LS,Running,2759674,12902960,2759676
openb-pod-9000,3152,5600,1,500,a100,BE,Failed,10,20,12
"""


def test_columns_become_jobs() -> None:
    t = read_alibaba(PODS.splitlines(), "p.csv")
    assert t.skipped == 1  # pod 0061: Pending, never scheduled
    assert t.time_format == "epoch"
    big, frac, typed_any, cpu, half = t.jobs
    assert (big.job_id, big.submit, big.start, big.duration, big.gpus, big.gpu_fraction, big.cpus) == (
        "openb-pod-0017", 9437497, 9437497, 10769854 - 9437497, 8, None, 88)
    assert (frac.gpus, frac.gpu_fraction, frac.duration, frac.state, frac.line) == (1, 0.22, 9973826 - 9679175,
                                                                                    "RUNNING", 3)
    assert (typed_any.gpu_type, typed_any.submit, typed_any.start, typed_any.gpu_fraction) == (None, 9967058, 9967063,
                                                                                             None)
    assert (cpu.gpus, cpu.gpu_fraction, cpu.duration) == (0, None, 12902960 - 2759676)
    assert (half.gpu_type, half.gpu_fraction, half.submit, half.duration) == ("a100", 0.5, 10, 8)
    assert {j.user for j in t.jobs} == {j.job_id for j in t.jobs}  # each pod its own user
    assert all(j.time_limit_s is None and j.qos is None for j in t.jobs)  # limits derived; k8s QoS not read


def test_detected_from_the_header() -> None:
    assert detect_format(HEADER) == "alibaba"
    assert detect_format("job_id,user,gpu_num,submit_time,duration") == "csv"
    assert [j.job_id for j in read_trace(PODS.splitlines(), "p.csv").jobs][:2] == ["openb-pod-0017", "openb-pod-0022"]


def test_fractions_are_routed_by_the_policys_isolation() -> None:
    """university: fraction_mode mig, MIG profiles 1g/2g/3g of an A100 -> 0.22 is a 2g slice (2/7 >= 0.22),
    0.5 is over the largest allowed slice (3/7) and the policy rejects it with its own message."""
    t = read_alibaba(PODS.splitlines(), "p.csv")
    router = Router(load_policy(str(UNIVERSITY)))
    frac = router.route(t.jobs[1])
    assert not isinstance(frac, str)
    assert (frac.job_class, frac.partition, frac.gpu_type, frac.mig_slices, frac.gpus_per_node) == (
        "mig-small", "mig", "a100", 2, 0)
    half = router.route(t.jobs[4])
    assert isinstance(half, str) and "no allowed MIG profile" in half
    whole = router.route(t.jobs[0])
    assert not isinstance(whole, str) and (whole.partition, whole.gpus_per_node) == ("batch", 8)
    # 10769854 - 9437497 s = 15.4 days: the derived limit is over batch's 2 days, so it is capped there
    assert whole.time_limit_s == 2 * 86400


@pytest.mark.parametrize(("row", "where"), [
    ("p,1,1,1,0,,LS,Running,0,10,0", "p.csv:2:5: gpu_milli: bad gpu_milli 0: expected 1..1000 for a GPU pod"),
    ("p,1,1,1,1500,,LS,Running,0,10,0", "p.csv:2:5: gpu_milli: bad gpu_milli 1500"),
    ("p,1,1,2,500,,LS,Running,0,10,0", "p.csv:2:5: gpu_milli: a fraction (500/1000) of 2 GPUs"),
    ("p,1,1,-1,1000,,LS,Running,0,10,0", "p.csv:2:4: num_gpu: bad count '-1'"),
    ("p,1,1,1,1000,,LS,Running,0,5,8", "p.csv:2:10: deletion_time: deleted before it was scheduled"),
    ("p,1,1,1,1000,,LS,Running,9,50,8", "p.csv:2:11: scheduled_time: scheduled before it was created"),
    ("p,1,1,1,1000,,LS,Running,noon,50,8", "p.csv:2:9: creation_time: bad time 'noon'"),
    ("p,1,1,1,1000,<x>,LS,Running,0,50,8", "p.csv:2:6: gpu_spec: bad GPU type in '<x>'"),
    ("p,1,1,1,1000,,LS,Running,0,50", "p.csv:2:1: 10 fields, the header has 11"),
    ("p,1,1,1,1\x00,,LS,Running,0,50,8", "p.csv:2:5: gpu_milli: bad count"),
])
def test_a_bad_row_is_one_line_with_file_line_column(row: str, where: str) -> None:
    with pytest.raises(TraceError) as err:
        read_alibaba([HEADER, row], "p.csv")
    assert str(err.value).startswith(where) and "\n" not in str(err.value)


def test_missing_columns_long_lines_and_streaming() -> None:
    with pytest.raises(TraceError, match=r"^p.csv:1:1: missing column\(s\) scheduled_time, deletion_time"):
        read_alibaba(["name,num_gpu,gpu_milli,creation_time"], "p.csv")
    with pytest.raises(TraceError, match=f"^p.csv:3:1: line longer than {MAX_LINE}"):
        read_alibaba([HEADER, "p,1,1,1,1000,,LS,Running,0,50,8", "x" * (MAX_LINE + 1)], "p.csv")
    # an endless trace with a bad row early: the reader streams, so it stops there instead of reading on
    endless = itertools.chain([HEADER, "p,1,1,1,1000,,LS,Running,0,50,8", "q,1,1,1,0,,LS,Running,0,50,8"],
                              itertools.repeat("r,1,1,1,1000,,LS,Running,0,50,8"))
    with pytest.raises(TraceError, match="^p.csv:3:5: gpu_milli"):
        read_alibaba(endless, "p.csv")


def test_cli_bad_pod_list_exits_1_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "p.csv").write_text(HEADER + "\np,1,1,3,250,,LS,Running,0,10,0\n")
    res = CliRunner().invoke(cli, ["simulate", "--policy", str(UNIVERSITY), "--trace", str(tmp_path / "p.csv"),
                                   "--out", str(tmp_path / "out")])
    assert res.exit_code == 1
    assert res.output == (f"slurm-gpu simulate: {tmp_path / 'p.csv'}:2:5: gpu_milli: a fraction (250/1000) of 3 GPUs:"
                          " only one GPU is shared\n")


def test_the_checked_in_sample_is_the_seeded_synthetic_list_with_the_published_share() -> None:
    text = SAMPLE.read_text()
    assert text == synthetic()  # regenerate: python -c 'from slurm_gpu.sim.alibaba import synthetic; ...'
    rows = list(csv.DictReader(text.splitlines()))
    fractional = [r for r in rows if r["num_gpu"] == "1" and int(r["gpu_milli"]) < 1000]
    assert len(rows) == 300 and len(fractional) == round(300 * 3078 / 8152) == 113
    assert FRACTIONAL_SHARE == 3078 / 8152
    assert {int(r["num_gpu"]) for r in rows} <= set(range(9))  # 0..8 as in the published list


def test_the_sample_runs_end_to_end(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["simulate", "--policy", str(UNIVERSITY), "--trace", str(SAMPLE),
                                   "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    out = tmp_path / "out"
    jobs = list(csv.DictReader((out / "jobs.csv").read_text().splitlines()))
    rejected = list(csv.DictReader((out / "rejected.csv").read_text().splitlines()))
    summary = json.loads((out / "summary.json").read_text())
    # 300 pods: 10 Pending (skipped); of the 290 that ran, the policy rejects fractions over 3/7 and CPU pods
    assert summary["skipped"] == 10 and len(jobs) + len(rejected) == 290
    assert summary["all"]["started"] == len(jobs) and summary["rejected"] == len(rejected) > 0
    assert {r["partition"] for r in jobs if 0 < float(r["gpus"]) < 1} == {"mig"}
    assert summary["classes"]["mig-small"]["started"] > 80
    assert all(int(r["start_time"]) >= int(r["submit_time"]) for r in jobs)
    assert (out / "report.html").is_file()
