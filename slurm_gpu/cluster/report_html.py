# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu report --html FILE``: the report as one self-contained HTML file, pure.

No script, no external resource: inline CSS and inline SVG charts (GPU-hours by account, efficiency per
day, queue wait by class). Every bar and point carries its number in ``data-value`` and a ``<title>``,
so a browser test can read the charts back (tests/cluster/test_report_html.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

W, BAR_H, GAP, LEFT = 640, 18, 6, 140


def _n(x: float | None, nd: int = 2) -> str:
    return "-" if x is None else f"{x:,.{nd}f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def _bars(title: str, rows: Sequence[tuple[str, Sequence[tuple[str, float | None]]]], unit: str,
          chart: str) -> str:
    """A horizontal bar chart: one group per row label, one bar per (series, value)."""
    values = [v for _, series in rows for _, v in series if v is not None]
    top = max(values) if values and max(values) > 0 else 1.0
    per_group = max((len(s) for _, s in rows), default=1)
    height = max(1, len(rows)) * (per_group * BAR_H + 2 * GAP) + 24
    out = [f'<figure><figcaption>{escape(title)}</figcaption>'
           f'<svg class="chart" data-chart="{escape(chart)}" width="{W}" height="{height}" '
           f'viewBox="0 0 {W} {height}" role="img" aria-label="{escape(title)}">']
    y = GAP
    for label, series in rows:
        out.append(f'<text x="{LEFT - 6}" y="{y + BAR_H - 4}" text-anchor="end">{escape(label[:24])}</text>')
        for i, (name, v) in enumerate(series):
            width = 0.0 if v is None else (W - LEFT - 90) * v / top
            text = f"{label} {name}: {'-' if v is None else f'{v:g}'} {unit}"
            out.append(f'<rect class="s{i}" x="{LEFT}" y="{y}" width="{width:.1f}" height="{BAR_H - 2}" '
                       f'data-label="{escape(label)}" data-series="{escape(name)}" '
                       f'data-value="{"" if v is None else repr(float(v))}"><title>{escape(text)}</title></rect>')
            out.append(f'<text x="{LEFT + width + 4:.1f}" y="{y + BAR_H - 5}">'
                       f'{escape(name)} {"-" if v is None else escape(f"{v:,.2f}")}</text>')
            y += BAR_H
        y += 2 * GAP
    out.append("</svg></figure>")
    return "".join(out)


def _line(title: str, points: Sequence[tuple[str, float | None]], chart: str) -> str:
    """Efficiency per day: a polyline over 0..100 %, one circle per day with a figure."""
    h, pad = 220, 30
    n = max(len(points), 1)
    step = (W - LEFT) / max(n - 1, 1)
    coords = [(LEFT + i * step if n > 1 else LEFT + (W - LEFT) / 2, v) for i, (_, v) in enumerate(points)]
    out = [f'<figure><figcaption>{escape(title)}</figcaption><svg class="chart" data-chart="{escape(chart)}" '
           f'width="{W}" height="{h + 2 * pad}" viewBox="0 0 {W} {h + 2 * pad}" role="img" '
           f'aria-label="{escape(title)}">',
           f'<line x1="{LEFT}" y1="{pad + h}" x2="{W}" y2="{pad + h}" class="axis"/>'
           f'<text x="{LEFT - 6}" y="{pad + 4}" text-anchor="end">100%</text>'
           f'<text x="{LEFT - 6}" y="{pad + h}" text-anchor="end">0%</text>']
    path = [f"{x:.1f},{pad + h - h * v:.1f}" for x, v in coords if v is not None]
    if len(path) > 1:
        out.append(f'<polyline class="s0" fill="none" points="{" ".join(path)}"/>')
    for (x, v), (day, _) in zip(coords, points, strict=True):
        out.append(f'<text x="{x:.1f}" y="{pad + h + 18}" text-anchor="middle">{escape(day[5:])}</text>')
        if v is not None:
            out.append(f'<circle class="s0" cx="{x:.1f}" cy="{pad + h - h * v:.1f}" r="4" data-label="{escape(day)}" '
                       f'data-value="{float(v)!r}"><title>{escape(day)}: E {_pct(v)}</title></circle>')
    out.append("</svg></figure>")
    return "".join(out)


CSS = """body{font:14px system-ui,sans-serif;margin:2em;color:#222;max-width:60em}
table{border-collapse:collapse;margin:1em 0}td,th{border-bottom:1px solid #ddd;padding:.25em .6em;text-align:right}
td:first-child,th:first-child{text-align:left}figure{margin:1.5em 0}figcaption{font-weight:600}
svg text{font-size:11px;fill:#333}.s0{fill:#3b6ea8;stroke:#3b6ea8}.s1{fill:#9bc1e8;stroke:#9bc1e8}
polyline.s0{fill:none;stroke-width:2}.axis{stroke:#999}"""


def render(doc: Mapping[str, Any], by_account: Mapping[str, Any]) -> str:
    """``doc``: the report document; ``by_account``: the same report grouped by account (its ``groups``)."""
    t = doc["total"]
    cur = f" {doc['currency']}" if doc.get("currency") else ""
    rows = []
    for key, r in doc["types"].items():
        cost = r.get("cost_per_effective_gpu_hour")
        rows.append(f"<tr><td>{escape(key)}</td><td>{_n(r['gpu_hours'])}</td><td>{_n(r['effective_gpu_hours'])}</td>"
                    f"<td>{_pct(r['efficiency'])}</td><td>{_n(r['idle_gpu_hours'])}</td>"
                    f"<td>{_n(r['gpu_hours_without_stats'])}</td>"
                    f"<td>{'-' if cost is None else escape(_n(cost) + cur)}</td></tr>")
    accounts = [(k, [("allocated", g["gpu_hours"]), ("effective", g["effective_gpu_hours"])])
                for k, g in by_account.get("groups", {}).items()]
    waits = [(c, [("p50", None if w["p50_seconds"] is None else w["p50_seconds"] / 60),
                  ("p95", None if w["p95_seconds"] is None else w["p95_seconds"] / 60)])
             for c, w in doc["wait"].items()]
    days = [(d, v["efficiency"]) for d, v in doc.get("days", {}).items()]
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
