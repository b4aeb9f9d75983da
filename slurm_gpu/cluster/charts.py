# SPDX-License-Identifier: Apache-2.0
"""Self-contained HTML charts, pure: inline SVG and CSS, no script, no external resource. Shared by the
cluster report (``cluster/report_html.py``) and the simulator's report (``sim/report_html.py``).

Every bar and point carries its number in ``data-value`` (and ``data-label``, ``data-series``) and a
``<title>``, so a browser test can read the charts back.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

W, BAR_H, GAP, LEFT = 640, 18, 6, 140


def num(x: float | None, nd: int = 2) -> str:
    return "-" if x is None else f"{x:,.{nd}f}"


def pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def bars(title: str, rows: Sequence[tuple[str, Sequence[tuple[str, float | None]]]], unit: str,
         chart: str, room: int = 90) -> str:
    """A horizontal bar chart: one group per row label, one bar per (series, value); ``room``: the
    pixels kept right of the longest bar for its label."""
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
            width = 0.0 if v is None else (W - LEFT - room) * v / top
            text = f"{label} {name}: {'-' if v is None else f'{v:g}'} {unit}"
            out.append(f'<rect class="s{i % 5}" x="{LEFT}" y="{y}" width="{width:.1f}" height="{BAR_H - 2}" '
                       f'data-label="{escape(label)}" data-series="{escape(name)}" '
                       f'data-value="{"" if v is None else repr(float(v))}"><title>{escape(text)}</title></rect>')
            out.append(f'<text x="{LEFT + width + 4:.1f}" y="{y + BAR_H - 5}">'
                       f'{escape(name)} {"-" if v is None else escape(f"{v:,.2f}")}</text>')
            y += BAR_H
        y += 2 * GAP
    out.append("</svg></figure>")
    return "".join(out)


def line(title: str, points: Sequence[tuple[str, float | None]], chart: str) -> str:
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
                       f'data-value="{float(v)!r}"><title>{escape(day)}: E {pct(v)}</title></circle>')
    out.append("</svg></figure>")
    return "".join(out)


CSS = """body{font:14px system-ui,sans-serif;margin:2em;color:#222;max-width:60em}
table{border-collapse:collapse;margin:1em 0}td,th{border-bottom:1px solid #ddd;padding:.25em .6em;text-align:right}
td:first-child,th:first-child{text-align:left}figure{margin:1.5em 0}figcaption{font-weight:600}
svg text{font-size:11px;fill:#333}.s0{fill:#3b6ea8;stroke:#3b6ea8}.s1{fill:#9bc1e8;stroke:#9bc1e8}
.s2{fill:#d9822b;stroke:#d9822b}.s3{fill:#5a9e5a;stroke:#5a9e5a}.s4{fill:#a05aa0;stroke:#a05aa0}
polyline.s0{fill:none;stroke-width:2}.axis{stroke:#999}"""


__all__ = ["CSS", "bars", "line", "num", "pct"]
