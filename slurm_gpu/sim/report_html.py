# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu simulate``'s ``DIR/report.html``: the policies side by side in one self-contained file, pure.

The charts are the cluster report's (``cluster/charts.py``: inline SVG, no script, no external
resource; every bar carries its number in ``data-value``): wait p50 and p95 per class, GPU
utilisation per class and overall, preemption losses per class, one bar per policy. Then the table of
differences (the rows of ``sim/report.py``'s text table), each policy against the first. Every number
is one of summary.json's (waits in minutes: summary.json's seconds / 60).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import TypeAlias

from slurm_gpu.cluster.charts import CSS, bars, num, pct
from slurm_gpu.jsontypes import JsonValue, json_at, json_number, json_object
from slurm_gpu.sim.report import ROWS

TABLE_CSS = "td.up{color:#a33}td.down{color:#286e28}.note{color:#555}"


Summary: TypeAlias = "Mapping[str, JsonValue]"  # one policy's summary.json (sim/report.py's summary())






def _number_or_none(v: JsonValue) -> int | float | None:
    return None if v is None else json_number(v)




def _minutes(v: JsonValue) -> float | None:
    return None if not isinstance(v, (int, float)) else v / 60


def _scopes(summaries: Sequence[Summary]) -> list[tuple[str, tuple[str, ...]]]:
    classes = sorted({c for s in summaries for c in json_object(s.get("classes", {}))})
    return [("all", ("all",))] + [(c, ("classes", c)) for c in classes]


def _chart(summaries: Sequence[Summary], title: str, path: tuple[str, ...], unit: str, chart: str,
           scale: Callable[[float], float | None] | None = None) -> str:
    rows = []
    for label, where in _scopes(summaries):
        series: list[tuple[str, float | None]] = []
        for s in summaries:
            got = json_at(s, where + path)
            v = got if isinstance(got, (int, float)) else None
            series.append((str(s["policy"]), scale(v) if scale and v is not None else v))
        rows.append((label, series))
    longest = max((len(f"{n} {v:,.2f}") for _, ser in rows for n, v in ser if v is not None), default=10)
    return bars(title, rows, unit, chart, room=min(360, 20 + 6 * longest))


def _cell(v: JsonValue) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:g}"
    return escape(str(v))


def table(summaries: Sequence[Summary]) -> str:
    """The table of differences: every row of the text table, the policies, then each against the first."""
    names = [str(s["policy"]) for s in summaries]
    head = "".join(f"<th>{escape(n)}</th>" for n in names)
    head += "".join(f"<th>{escape(n)} &minus; {escape(names[0])}</th>" for n in names[1:])
    out = [f'<table id="differences"><tr><th></th>{head}</tr>']
    rows: list[tuple[str, list[JsonValue]]] = [("rejected", [s.get("rejected") for s in summaries])]
    for scope, where in _scopes(summaries):
        for label, path in ROWS:
            rows.append((f"{scope}: {label}", [json_at(s, where + tuple(path)) for s in summaries]))
    for label, vals in rows:
        cells = "".join(f"<td>{_cell(v)}</td>" for v in vals)
        for v in vals[1:]:
            if isinstance(v, (int, float)) and isinstance(vals[0], (int, float)):
                d = round(v - vals[0], 4)
                cls = ' class="up"' if d > 0 else ' class="down"' if d < 0 else ""
                cells += f'<td{cls} data-delta="{d!r}">{_cell(d)}</td>'
            else:
                cells += "<td>-</td>"
        out.append(f'<tr data-row="{escape(label)}"><td>{escape(label)}</td>{cells}</tr>')
    out.append("</table>")
    return "".join(out)


def render(summaries: Sequence[Summary], trace: str = "") -> str:
    """One HTML page for the summaries (one per policy, as in summary.json), the first the baseline."""
    names = ", ".join(str(s["policy"]) for s in summaries)
    lines = []
    for s in summaries:
        a, makespan = json_object(s["all"]), json_number(s.get("makespan_s", 0))
        wait = json_object(a["wait_s"])
        lines.append(
            f'<li data-policy="{escape(str(s["policy"]))}"><b>{escape(str(s["policy"]))}</b>: '
            f'{a["started"]} of {a["jobs"]} jobs started, {s.get("rejected", 0)} rejected, '
            f'{s.get("skipped", 0)} skipped; {s.get("gpus", 0)} GPUs; makespan {num(makespan / 3600)} h; '
            f'GPU utilisation {pct(_number_or_none(a.get("gpu_utilisation")))}; '
            f'wait p50 {num(_minutes(wait["p50"]), 1)} min, '
            f'p95 {num(_minutes(wait["p95"]), 1)} min; {a.get("preemptions", 0)} preemptions, '
            f'{num(_number_or_none(a.get("lost_gpu_hours")))} GPU-hours lost.</li>')
    title = f"Simulated schedule: {names}"
    return "".join([
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{CSS}\n{TABLE_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="note">Trace {escape(trace)}. The first policy is the baseline; the last columns of '
        "the table are each policy minus it. Waits are first start minus submit; JCT is last end minus "
        "submit; utilisation is GPU-seconds held over the cluster's GPUs times the makespan.</p>",
        f"<ul id=\"summary\">{''.join(lines)}</ul>",
        _chart(summaries, "Wait p50 by class (minutes)", ("wait_s", "p50"), "min", "wait_p50", _minutes),
        _chart(summaries, "Wait p95 by class (minutes)", ("wait_s", "p95"), "min", "wait_p95", _minutes),
        _chart(summaries, "GPU utilisation by class (share of the cluster's GPU time)", ("gpu_utilisation",), "",
               "utilisation"),
        _chart(summaries, "GPU-hours lost to preemption by class", ("lost_gpu_hours",), "GPU-hours", "lost"),
        "<h2>Differences</h2>",
        table(summaries),
        "</body></html>\n",
    ])


__all__ = ["render", "table"]
