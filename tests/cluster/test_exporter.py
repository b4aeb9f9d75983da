# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu exporter``: the textfile checked by a strict parser of the Prometheus text exposition
format (0.0.4) and of our naming rules; the cluster figures are those docs/cluster.md works out by hand
for the recorded lab (tests/cluster/data/lab-22.05)."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_gpu.cluster.exporter import exposition
from slurm_gpu.cluster.view import from_texts

DATA = Path(__file__).resolve().parent / "data" / "lab-22.05"
NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')
VALUE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|Inf|NaN)")


def parse_exposition(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """A strict reader: every line is HELP, TYPE or a sample; TYPE and HELP once per family and before its
    samples; a family's samples together; no timestamps; no duplicate series; our names and units."""
    assert text.endswith("\n") and "\r" not in text
    series: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    types: dict[str, str] = {}
    helps: set[str] = set()
    done: set[str] = set()
    current = None
    for line in text[:-1].split("\n"):
        if line.startswith("# HELP "):
            name = line.split(" ")[2]
            assert NAME.fullmatch(name) and name not in helps and name not in done, line
            helps.add(name)
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert NAME.fullmatch(name) and name not in types and kind in ("counter", "gauge"), line
            types[name] = kind
            if current is not None and current != name:
                done.add(current)
            current = name
            continue
        assert not line.startswith("#") and line.strip() == line and line, repr(line)
        m = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)", line)
        assert m, repr(line)
        name, labels_text, value = m.groups()
        assert name == current and name in helps, line  # declared, and samples of one family together
        labels: list[tuple[str, str]] = []
        if labels_text:
            body = labels_text[1:-1]
            pos = 0
            while pos < len(body):
                lm = LABEL.match(body, pos)
                assert lm, line
                labels.append((lm.group(1), lm.group(2)))
                pos = lm.end()
                if pos < len(body):
                    assert body[pos] == ",", line
                    pos += 1
            assert len({k for k, _ in labels}) == len(labels), line
        assert VALUE.fullmatch(value), line  # a value and nothing else: no timestamp
        key = (name, tuple(sorted(labels)))
        assert key not in series, line
        series[key] = float(value)
        # naming: app prefix, counters end in _total, ratios in 0..1, base units only
        assert name.startswith("slurm_gpu_") and "percent" not in name and not name.endswith(("_ms", "_kb", "_mb"))
        assert (types[name] == "counter") == name.endswith("_total"), name
        if name.endswith("_ratio"):
            assert 0.0 <= series[key] <= 1.0, line
        assert not math.isinf(series[key])
    return series


def unescape(v: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), v)


def view():
    return from_texts(*[(DATA / f).read_text() for f in ("nodes.txt", "jobs.json", "partitions.txt")])


RECORDS = [
    {"job_id": 1184, "node": "h100n1", "gpu_index": 0, "gpu_util_pct": 92.5, "mem_util_pct": 40.0,
     "max_memory_bytes": 9_000_000_000, "energy_j": 123.4, "start": 100.0, "end": 160.5},
    {"job_id": 1184, "node": "h100n1", "gpu_index": 0, "gpu_util_pct": 50.0, "mem_util_pct": None,
     "max_memory_bytes": None, "energy_j": None, "start": 100.0, "end": 200.0},  # a later record wins
    {"job_id": 7, "node": 'we"ird\\node\nx', "gpu_index": 1, "gpu_util_pct": 100.0, "start": None, "end": 5.0},
    {"job_id": 8, "node": "n", "gpu_index": 2, "gpu_util_pct": float("nan"), "energy_j": True},  # dropped values
    "not a record",
]


def test_cluster_and_job_metrics_parse_strictly_and_match_the_view():
    text = exposition(view().summary, RECORDS)  # type: ignore[arg-type]
    s = parse_exposition(text)
    h100 = (("type", "h100"), ("unit", "gpu"))
    assert s[("slurm_gpu_gres_units", tuple(sorted((*h100, ("state", "free")))))] == 10
    assert s[("slurm_gpu_gres_units", tuple(sorted((*h100, ("state", "allocated")))))] == 6
    assert s[("slurm_gpu_gres_stranded_units", h100)] == 3
    assert s[("slurm_gpu_largest_startable_units", tuple(sorted((*h100, ("scope", "one_node")))))] == 7
    assert s[("slurm_gpu_fragmentation_ratio", tuple(sorted((*h100, ("k", "4")))))] == 0.3
    assert s[("slurm_gpu_fragmentation_ratio", tuple(sorted((*h100, ("k", "8")))))] == 1.0
    job = (("gpu", "0"), ("jobid", "1184"), ("node", "h100n1"))
    assert s[("slurm_gpu_job_gpu_utilization_ratio", job)] == 0.5
    assert s[("slurm_gpu_job_gpu_duration_seconds", job)] == 100.0
    assert ("slurm_gpu_job_gpu_memory_max_bytes", job) not in s  # the later record has none
    weird = [k for k in s if k[0] == "slurm_gpu_job_gpu_utilization_ratio" and ("jobid", "7") in k[1]]
    assert len(weird) == 1 and unescape(dict(weird[0][1])["node"]) == 'we"ird\\node\nx'
    assert not any(("jobid", "8") in k[1] and k[0] != "slurm_gpu_job_end_timestamp_seconds" for k in s)


def test_empty_is_empty():
    assert exposition(None, []) == ""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", "exporter", *args], capture_output=True,
                          text=True, timeout=60, check=False)


def test_cli_writes_by_rename(tmp_path):
    stats = tmp_path / "gpu-jobs.jsonl"
    stats.write_text("".join(json.dumps(r) + "\n" for r in RECORDS[:3]) + "{half a line\n")
    out = tmp_path / "textfile"
    out.mkdir()
    (out / "slurm_gpu.prom").write_text("old")
    p = run("--textfile", str(out), "--records", str(DATA), "--stats", str(stats))
    assert p.returncode == 0, p.stderr
    assert os.listdir(out) == ["slurm_gpu.prom"]  # no temporary file left behind
    s = parse_exposition((out / "slurm_gpu.prom").read_text())
    assert s[("slurm_gpu_nodes", (("state", "total"),))] == 3
    assert ("slurm_gpu_job_gpu_energy_joules_total", (("gpu", "0"), ("jobid", "1184"), ("node", "h100n1"))) not in s
    p = run("--textfile", str(out), "--no-cluster", "--stats", str(stats))
    assert p.returncode == 0 and "slurm_gpu_nodes" not in (out / "slurm_gpu.prom").read_text()


def test_cli_skips_what_json_cannot_hold_with_one_line(tmp_path):
    """A line nested past the recursion limit (json's RecursionError) and numbers too large for a float
    (4,000 digits: OverflowError in the metrics) were tracebacks; now the record is skipped or its value
    dropped, with one line on stderr, and the good records are exported."""
    stats = tmp_path / "gpu-jobs.jsonl"
    big = "9" * 4000
    huge = '{"job_id": 5, "node": "n", "gpu_index": 0, "gpu_util_pct": ' + big + ', "start": 0, "end": ' + big + "}"
    stats.write_text(json.dumps(RECORDS[0]) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n" + huge + "\n"
                     + '{"job_id": 6, "a": ' + "[" * 5000 + "]" * 5000 + "}\n")
    out = tmp_path / "textfile"
    out.mkdir()
    p = run("--textfile", str(out), "--no-cluster", "--stats", str(stats))
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    (line,) = p.stderr.splitlines()
    assert f"{stats}: 2 record(s) skipped, nested too deeply" in line and "line 2)" in line
    s = parse_exposition((out / "slurm_gpu.prom").read_text())
    assert s[("slurm_gpu_job_gpu_utilization_ratio", (("gpu", "0"), ("jobid", "1184"), ("node", "h100n1")))] == 0.925
    assert ("slurm_gpu_job_gpu_utilization_ratio", (("gpu", "0"), ("jobid", "5"), ("node", "n"))) not in s


@pytest.mark.parametrize("args", [["--textfile", "/nonexistent/dir", "--no-cluster"],
                                  ["--textfile", "/tmp", "--no-cluster", "--stats", "/dev/zero"],
                                  ["--textfile", "/tmp", "--no-cluster", "--stats", "/nonexistent.jsonl"]])
def test_cli_bad_input_is_one_line_exit_2(args):
    p = run(*args)
    assert p.returncode == 2 and "Traceback" not in p.stderr and p.stderr.strip()


@pytest.mark.parametrize("bad", [
    "slurm_gpu_x 1\n",  # no HELP/TYPE
    "# HELP slurm_gpu_x h\n# TYPE slurm_gpu_x gauge\nslurm_gpu_x 1 1700000000\n",  # a timestamp
    "# HELP slurm_gpu_x h\n# TYPE slurm_gpu_x gauge\nslurm_gpu_x{a=\"1\",a=\"2\"} 1\n",  # duplicate label
    "# HELP slurm_gpu_x h\n# TYPE slurm_gpu_x gauge\nslurm_gpu_x{a=\"\\q\"} 1\n",  # bad escape
    "# HELP slurm_gpu_x h\n# TYPE slurm_gpu_x counter\nslurm_gpu_x 1\n",  # counter without _total
    "# HELP slurm_gpu_x_ratio h\n# TYPE slurm_gpu_x_ratio gauge\nslurm_gpu_x_ratio 1.5\n",  # ratio over 1
    "# HELP x h\n# TYPE x gauge\nx 1\n",  # no app prefix
    "# HELP slurm_gpu_x h\n# TYPE slurm_gpu_x gauge\nslurm_gpu_x 1\nslurm_gpu_x 2\n",  # duplicate series
    "# HELP slurm_gpu_x h\n# TYPE slurm_gpu_x gauge\nslurm_gpu_x 1",  # no final newline
])
def test_the_strict_parser_rejects(bad):
    with pytest.raises(AssertionError):
        parse_exposition(bad)


@pytest.mark.slurm
def test_live_lab_matches_cluster_json(slurm_lab, tmp_path):
    env = slurm_lab.env()
    p = subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", "exporter", "--textfile", str(tmp_path)],
                       capture_output=True, text=True, timeout=60, env=env, check=False)
    assert p.returncode == 0, p.stderr
    s = parse_exposition((tmp_path / "slurm_gpu.prom").read_text())
    c = subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", "cluster", "--json"], capture_output=True,
                       text=True, timeout=60, env=env, check=True)
    total = json.loads(c.stdout)["types"]["h100"]["total"]  # constant while other jobs come and go
    h100 = [v for (name, labels), v in s.items() if name == "slurm_gpu_gres_units" and ("type", "h100") in labels]
    assert len(h100) == 3 and sum(h100) == total == 16


def test_nesting_is_bounded_by_us_not_by_the_interpreter():
    """json.loads recurses (or, on newer Pythons, builds the structure): the depth bound is ours."""
    from slurm_gpu.jsontypes import MAX_DEPTH, nested_deeper_than

    assert not nested_deeper_than('{"a": [1, {"b": "[[[[" }]}')
    assert not nested_deeper_than("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    assert nested_deeper_than("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert not nested_deeper_than('"' + "[" * 500 + '"')  # brackets inside a string
    assert not nested_deeper_than('["\\"' + "[" * 500 + '"]')  # an escaped quote keeps the string open
