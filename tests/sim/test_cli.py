# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu simulate``: files written, several policies side by side, exit codes 0 / 1 / 2."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurm_gpu.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
UNIVERSITY = str(ROOT / "examples" / "policies" / "university.yaml")
TINY = str(Path(__file__).resolve().parent / "data" / "tiny.yaml")
TRACE = """job_id,user,gpu_num,node_num,state,submit_time,start_time,end_time,duration,queue
1,u,8,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:00,2020-04-01 01:00:00,3600,0
2,v,8,1,COMPLETED,2020-04-01 00:10:00,2020-04-01 00:10:00,2020-04-01 00:20:00,600,0
3,v,0,1,COMPLETED,2020-04-01 00:10:00,2020-04-01 00:10:00,2020-04-01 03:20:00,,0
"""


def test_one_policy_writes_jobs_and_summary(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text(TRACE)
    res = CliRunner().invoke(cli, ["simulate", "--policy", TINY, "--trace", str(tmp_path / "t.csv"),
                                   "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader((tmp_path / "out" / "jobs.csv").read_text().splitlines()))
    # tiny has 8 GPUs: job 2 waits for job 1; job 3 (CPU-only) matches no class and is rejected
    assert [(r["job_id"], r["start_time"], r["end_time"]) for r in rows] == [
        ("1", "2020-04-01 00:00:00", "2020-04-01 01:00:00"), ("2", "2020-04-01 01:00:00", "2020-04-01 01:10:00")]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["rejected"] == 1 and summary["all"]["started"] == 2
    assert "no job class" in (tmp_path / "out" / "rejected.csv").read_text()


def test_two_policies_side_by_side(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text(TRACE)
    res = CliRunner().invoke(cli, ["simulate", "--policy", TINY, "--policy", UNIVERSITY, "--trace",
                                   str(tmp_path / "t.csv"), "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    for name in ("tiny", "university"):
        assert (tmp_path / "out" / name / "jobs.csv").is_file()
    table = (tmp_path / "out" / "differences.txt").read_text()
    assert table == res.output and "university - tiny" in table


def test_bad_trace_exits_1_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("job_id,submit_time,duration\n1,noon,5\n")
    res = CliRunner().invoke(cli, ["simulate", "--policy", TINY, "--trace", str(tmp_path / "t.csv"),
                                   "--out", str(tmp_path / "out")])
    assert res.exit_code == 1
    assert res.output == f"slurm-gpu simulate: {tmp_path / 't.csv'}:2:2: submit_time: bad time 'noon': " \
                         "expected epoch seconds or YYYY-MM-DD[T ]HH:MM:SS\n"


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text(TRACE)
    missing = CliRunner().invoke(cli, ["simulate", "--policy", TINY, "--trace", str(tmp_path / "nope.csv"),
                                       "--out", str(tmp_path / "out")])
    assert missing.exit_code == 2 and "is not a readable file" in missing.output
    bad = CliRunner().invoke(cli, ["simulate", "--policy", TINY, "--trace", str(tmp_path / "t.csv"),
                                   "--out", str(tmp_path / "out"), "--bf-interval", "soon"])
    assert bad.exit_code == 2 and "bad duration 'soon'" in bad.output
    binary = tmp_path / "b.csv"
    binary.write_bytes(b"job_id,submit_time,duration\n\xff\xfe\n")
    res = CliRunner().invoke(cli, ["simulate", "--policy", TINY, "--trace", str(binary), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "not UTF-8" in res.output


def test_an_output_that_cannot_be_written_exits_2(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text(TRACE)
    (tmp_path / "file").write_text("")
    res = CliRunner().invoke(cli, ["simulate", "--policy", TINY, "--trace", str(tmp_path / "t.csv"),
                                   "--out", str(tmp_path / "file" / "sub")])
    assert res.exit_code == 2 and "cannot write" in res.output


def test_csv_outputs_hold_no_spreadsheet_formulas(tmp_path: Path) -> None:
    """Job ids from the trace that a spreadsheet would run (=, +, -, @, tab, CR first) come out with a
    single quote in front (OWASP); a negative number stays a number. Before: ``=cmd|' /C calc'!A0`` as is."""
    ids = ["=cmd|' /C calc'!A0", "+SUM(1+1)", "-2+3", "@A1", "-5", "7"]  # (the reader strips tabs and CRs)
    lines = TRACE.splitlines()[:1] + [
        f'"{i}",u,{8 if n < 4 else 0},1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:00,2020-04-01 01:00:00,60,0'
        for n, i in enumerate(ids)]
    (tmp_path / "t.csv").write_text("\n".join(lines) + "\n")
    res = CliRunner().invoke(cli, ["simulate", "--policy", TINY, "--trace", str(tmp_path / "t.csv"),
                                   "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    jobs = [r["job_id"] for r in csv.DictReader((tmp_path / "out" / "jobs.csv").read_text().splitlines())]
    assert jobs == ["'" + i for i in ids[:4]]
    rejected = [r["job_id"] for r in csv.DictReader((tmp_path / "out" / "rejected.csv").read_text().splitlines())]
    assert rejected == ["-5", "7"]  # CPU-only: no job class; plain numbers, unquoted


def test_the_csv_cell_rule() -> None:
    from slurm_gpu.csv_cells import cell, unquote

    for text in ("=1+2", "+1+2", "-1+2", "@SUM(A1)", "\t=1", "\r=1", "-", "+", "=", "-inf", "-nan", "--5"):
        assert cell(text) == "'" + text and unquote(cell(text)) == text
    for value in ("-5", "+5", "-1.5", "-.5", "1e9", "-2E-3", "abc", "", "'=x", 5, -5, None, 1.5):
        assert cell(value) == value
    assert unquote("'abc") == "'abc"  # only what cell() added comes off


def test_progress_goes_to_stderr_only(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # the engine calls back every 1,024 event times; the line is printed at most every every_s seconds
    from slurm_gpu.sim.engine import simulate
    from slurm_gpu.sim.params import Params
    from slurm_gpu.sim.run_files import progress_line
    from slurm_gpu.sim.traces import read_trace
    from tests.sim.helpers import TINY as TINY_POLICY

    rows = ["job_id,user,gpu_num,submit_time,duration"] + [f"j{i},u,1,{i * 7},{600 + i % 50}" for i in range(3000)]
    calls: list[tuple[int, int, int, int]] = []
    result = simulate(read_trace(rows, "t.csv"), TINY_POLICY, Params(), progress=lambda *a: calls.append(a))
    assert len(calls) >= 2 and all(c[2] == len(result.jobs) == 3000 for c in calls)
    assert [c[1] for c in calls] == sorted(c[1] for c in calls) and calls[-1][1] <= 3000
    report = progress_line("tiny", every_s=0)
    report(2 * 86400, 12, 3000, 40)
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == "slurm-gpu simulate: tiny: 12 of 3,000 jobs started, 40 pending, 2.0 simulated days\n"
    # --progress changes nothing on stdout nor in the files
    (tmp_path / "t.csv").write_text(TRACE)
    got = []
    for flag in ("--progress", "--no-progress"):
        res = CliRunner().invoke(cli, ["simulate", "--policy", TINY, "--trace", str(tmp_path / "t.csv"),
                                       "--out", str(tmp_path / flag), flag])
        assert res.exit_code == 0, res.output
        got.append((res.stdout, (tmp_path / flag / "jobs.csv").read_text()))
    assert got[0] == got[1]
