# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu simulate``'s DIR/report.html: self-contained, opened in headless chromium without a console
message, its charts and table carry summary.json's numbers; and the outputs are written without
following a symlink or opening a FIFO that was planted at their names."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurm_gpu.cli.main import cli
from slurm_gpu.sim.report_html import render
from tests.cluster.test_report_html import Marks, open_in_browser

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
UNIVERSITY = str(DATA / "university.yaml")
VARIANT = str(DATA / "university-debug-h100.yaml")
SAMPLE = str(DATA / "alibaba-openb-synthetic.csv")


def simulate_two(out: Path) -> tuple[str, dict[str, dict]]:
    res = CliRunner().invoke(cli, ["simulate", "--policy", UNIVERSITY, "--policy", VARIANT, "--trace", SAMPLE,
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    sums = {n: json.loads((out / n / "summary.json").read_text()) for n in ("university", "university-debug-h100")}
    return (out / "report.html").read_text(), sums


def test_report_opens_cleanly_and_shows_the_summary_numbers(tmp_path: Path) -> None:
    html, sums = simulate_two(tmp_path / "out")
    assert not re.search(r"(src|href)=|https?:|<script", html)  # self-contained, nothing to fetch or run
    dom, log = open_in_browser(tmp_path, html)
    assert "CONSOLE" not in log, log
    parser = Marks()
    parser.feed(dom)
    marks = {(c, a["data-label"], a["data-series"]): float(a["data-value"])
             for c, _, a in parser.marks if a.get("data-value")}
    checked = 0
    for pol, s in sums.items():
        for cls, stats in [("all", s["all"]), *s["classes"].items()]:
            for q in ("p50", "p95"):
                assert marks[(f"wait_{q}", cls, pol)] == pytest.approx(stats["wait_s"][q] / 60)
            assert marks[("utilisation", cls, pol)] == stats["gpu_utilisation"]
            assert marks[("lost", cls, pol)] == stats["lost_gpu_hours"]
            checked += 4
    assert checked == 2 * 4 * 4  # two policies x (all + 3 classes) x 4 charts
    # bar lengths follow the numbers: mig-small's p95 wait, variant against university
    bars = {(c, a["data-label"], a["data-series"]): a for c, _, a in parser.marks}
    b, v = (bars[("wait_p95", "mig-small", p)] for p in ("university", "university-debug-h100"))
    assert float(v["width"]) / float(b["width"]) == pytest.approx(4920 / 8539, abs=2e-3)
    # the table of differences: the variant minus the baseline, as the text table prints it
    row = re.search(r'<tr data-row="mig-small: wait p50 \(s\)">(.*?)</tr>', dom)
    assert row is not None and re.findall(r"<td[^>]*>([^<]*)</td>", row.group(1)) == [
        "mig-small: wait p50 (s)", "624", "21", "-603"]
    assert 'data-delta="-603.0"' in row.group(1)


def test_one_policy_gets_a_report_too_and_names_are_escaped(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["simulate", "--policy", UNIVERSITY, "--trace", SAMPLE, "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "summary.json").read_text())
    assert "<h1>Simulated schedule: university</h1>" in (tmp_path / "report.html").read_text()
    s["policy"] = '<img src=x onerror="alert(1)">'
    s["classes"] = {"<u>": s["all"]}
    html = render([s], "<t>.csv")
    assert "<img" not in html and "<u>" not in html
    assert "&lt;u&gt;" in html and "&lt;img" in html and "&lt;t&gt;.csv" in html


def test_outputs_replace_a_fifo_or_symlink_without_opening_or_following_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "jobs.csv")  # opening it for writing would block with no reader
    target = tmp_path / "elsewhere.json"
    target.write_text("keep")
    (out / "summary.json").symlink_to(target)
    (out / "report.html").symlink_to(tmp_path / "missing.html")  # dangling: writing through it would create it
    p = subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", "simulate", "--policy", UNIVERSITY,
                        "--trace", SAMPLE, "--out", str(out)], capture_output=True, text=True, timeout=120,
                       cwd=ROOT, check=False)
    assert p.returncode == 0, p.stderr
    for name in ("jobs.csv", "summary.json", "report.html"):
        assert (out / name).is_file() and not (out / name).is_symlink()
    assert target.read_text() == "keep" and not (tmp_path / "missing.html").exists()
    assert json.loads((out / "summary.json").read_text())["policy"] == "university"
    assert not [n for n in os.listdir(out) if n.endswith(".tmp")]


def test_a_symlinked_policy_directory_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (out / "university").symlink_to(tmp_path / "elsewhere")
    res = CliRunner().invoke(cli, ["simulate", "--policy", UNIVERSITY, "--policy", VARIANT, "--trace", SAMPLE,
                                   "--out", str(out)])
    assert res.exit_code == 2 and "a symbolic link" in res.output
    assert os.listdir(tmp_path / "elsewhere") == []
