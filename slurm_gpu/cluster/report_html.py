# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu report --html FILE``: the report as one self-contained HTML file, pure.

No script, no external resource: inline CSS and inline SVG charts (``cluster/charts.py``: GPU-hours by
account, efficiency per day, queue wait by class). Every bar and point carries its number in
``data-value`` and a ``<title>``, so a browser test can read the charts back (tests/cluster/test_report_html.py).
"""

from __future__ import annotations

from html import escape

from slurm_gpu.cluster.charts import CSS
from slurm_gpu.cluster.charts import bars as _bars
from slurm_gpu.cluster.charts import line as _line
from slurm_gpu.cluster.charts import num as _n
from slurm_gpu.cluster.charts import pct as _pct
from slurm_gpu.cluster.report import ReportDoc


def render(doc: ReportDoc, by_account: ReportDoc) -> str:
    """``doc``: the report document; ``by_account``: the same report grouped by account (its ``groups``)."""
    t = doc["total"]
    cur = f" {doc['currency']}" if doc["currency"] else ""
    rows = []
    for key, r in doc["types"].items():
        cost = r.get("cost_per_effective_gpu_hour")
        rows.append(f"<tr><td>{escape(key)}</td><td>{_n(r['gpu_hours'])}</td><td>{_n(r['effective_gpu_hours'])}</td>"
                    f"<td>{_pct(r['efficiency'])}</td><td>{_n(r['idle_gpu_hours'])}</td>"
                    f"<td>{_n(r['gpu_hours_without_stats'])}</td>"
                    f"<td>{'-' if cost is None else escape(_n(cost) + cur)}</td></tr>")
    accounts = [(k, [("allocated", g["gpu_hours"]), ("effective", g["effective_gpu_hours"])])
                for k, g in by_account["groups"].items()]
    waits = [(c, [("p50", None if w["p50_seconds"] is None else w["p50_seconds"] / 60),
                  ("p95", None if w["p95_seconds"] is None else w["p95_seconds"] / 60)])
             for c, w in doc["wait"].items()]
    days = [(d, v["efficiency"]) for d, v in doc["days"].items()]
    return "".join([
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<title>GPU usage {escape(doc['since'])} .. {escape(doc['until'])}</title><style>{CSS}</style></head><body>",
        f"<h1>GPU usage {escape(doc['since'])} .. {escape(doc['until'])}</h1>",
        f'<p id="summary" data-efficiency="{"" if t["efficiency"] is None else t["efficiency"]!r}">'
        f"{t['jobs']} GPU jobs, {_n(t['gpu_hours'])} GPU-hours allocated, {_n(t['effective_gpu_hours'])} "
        f"effective: E = {_pct(t['efficiency'])} (over {_n(t['gpu_hours_with_stats'])} GPU-hours with stats; "
        f"{_n(t['gpu_hours_without_stats'])} without). Idle: {_n(t['idle_gpu_hours'])} GPU-hours. "
        f"Preemptions: {t['preemptions']}, at most {_n(t['preempted_gpu_hours'])} GPU-hours lost.</p>",
        "<table><tr><th>GPU type</th><th>GPU-h</th><th>effective GPU-h</th><th>E</th><th>idle GPU-h</th>"
        f"<th>no stats</th><th>cost per effective GPU-h</th></tr>{''.join(rows)}</table>",
        _bars("GPU-hours by account", accounts, "GPU-hours", "accounts"),
        _line("Efficiency E per day (runs by start day)", days, "efficiency"),
        _bars("Queue wait by class (minutes)", waits, "min", "wait"),
        "</body></html>\n",
    ])


__all__ = ["render"]
