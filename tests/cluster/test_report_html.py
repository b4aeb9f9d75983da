# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu report --html``: one self-contained file, opened in the distribution's headless chromium
(``chromium-headless-shell``, Debian 12): no console message, and the charts the browser built carry the
hand-computed numbers of tests/cluster/test_report.py (the recorded 22.05 rows)."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from slurm_gpu.cluster.report import report
from slurm_gpu.cluster.report_html import render
from tests.cluster.test_report import rows
from tests.conftest import missing

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser")


def browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    missing("no headless chromium (Debian: apt-get install chromium-headless-shell; slurm-gpu lab up installs it)")


def open_in_browser(tmp_path, html: str) -> tuple[str, str]:
    """(the DOM chromium built, its log on stderr)."""
    page = tmp_path / "report.html"
    page.write_text(html, encoding="utf-8")
    p = subprocess.run([browser(), "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
                        f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
                       capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout, p.stderr


class Marks(HTMLParser):
    """Every element with a data-value: (chart, tag, attributes)."""

    def __init__(self) -> None:
        super().__init__()
        self.chart = ""
        self.marks: list[tuple[str, str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if "data-chart" in a:
            self.chart = a["data-chart"]
        if "data-value" in a:
            self.marks.append((self.chart, tag, a))


def doc_html():
    r = rows("22.05")
    return render(report(r, None, None, "2026-12-01T00:00:00", "2026-12-01T04:00:00"), report(r, None, "account"))


def test_opens_without_console_messages_and_charts_show_the_numbers(tmp_path):
    html = doc_html()
    assert not re.search(r"(src|href)=|https?:|<script", html)  # self-contained, nothing to fetch or run
    dom, log = open_in_browser(tmp_path, html)
    assert "CONSOLE" not in log, log
    parser = Marks()
    parser.feed(dom)
    bars = {(c, a["data-label"], a.get("data-series", "")): a for c, _, a in parser.marks}
    alloc, eff = bars[("accounts", "lab", "allocated")], bars[("accounts", "lab", "effective")]
    assert float(alloc["data-value"]) == round(358 / 3600, 6)
    assert float(eff["data-value"]) == round(116.2 / 3600, 6)
    # the bars' lengths show the ratio of the numbers: effective / allocated = 116.2 / 358
    assert float(eff["width"]) / float(alloc["width"]) == pytest.approx(116.2 / 358, abs=2e-3)
    assert float(bars[("efficiency", "2026-12-01", "")]["data-value"]) == round(116.2 / 252, 6)
    assert float(bars[("wait", "interactive", "p50")]["data-value"]) == pytest.approx(14 / 60)
    assert float(bars[("wait", "spot", "p95")]["data-value"]) == pytest.approx(14 / 60)
    assert "E = 46.1%" in dom


def test_the_console_check_sees_an_error(tmp_path):
    """The control: the same page with a script that logs an error is caught by the same check."""
    _, log = open_in_browser(tmp_path, doc_html().replace("</body>", '<script>console.error("x")</script></body>'))
    assert "CONSOLE" in log


def test_labels_are_escaped():
    r = [row | {"Account": '<img src=x onerror="alert(1)">'} for row in rows("22.05")]
    html = render(report(r), report(r, by="account"))
    assert "<img" not in html and "&lt;img" in html
