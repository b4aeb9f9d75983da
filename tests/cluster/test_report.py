# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu report``'s numbers, by hand, on recorded ``sacct -a -X -D -P`` text.

tests/cluster/data/sacct-22.05/report.txt: real rows of the lab's Slurm 22.05.8 (jobs 30, 31, 32 with five
REQUEUED runs after preemption, 41 without GPUs, 55 whose AdminComment sacctmgr mangled into
``sg1:abc:x,y``), with the AdminComment of 31 and of 32's last run set to the summaries the epilog writes:

- 31: h100 x1, 56 s, one GPU at 50 %                       -> U = 0.5
- 32 (last run): a100 x4, 49 s, GPUs at 100, 50, 0, 30 %   -> U = 180 / 400 = 0.45
- no stats: 30 (h100 x1, 26 s), 32's REQUEUED runs (a100 x4, 4+5+4+3+3 = 19 s), 55 (h100 x2, 2 s)

sacct-24.11/report.txt: the same rows with AllocTRES in the order 24.11 prints TRES
(``cpu,mem,node,billing,gres/gpu,gres/gpu:TYPE``) and job 30 in the ``gres:gpu`` spelling.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_gpu.cluster.report import counted_percentile, lines, percentile, report, reports
from slurm_gpu.policy import load_policy
from slurm_gpu.slurm.sacct import iter_sacct, parse_sacct, sacct_bytes, sacct_seconds, sacct_time, tres_gpus

DATA = Path(__file__).resolve().parent / "data"
POLICY = """version: 1
name: reporttest
gpu_types:
  - {name: h100, memory_gb: 80}
  - {name: a100, memory_gb: 40, mig_capable: true, mig_profiles: [1g.5gb, 1g.10gb, 2g.10gb, 3g.20gb]}
partitions:
  - {name: spot, node_types: []}
qos:
  - {name: spot}
classes:
  - {name: scavenger, partition: spot, qos: spot, target_wait: 10s}
prices:
  - {name: h100, per_gpu_hour: 3.0, currency: EUR}
  - {name: a100, per_gpu_hour: 1.8}
autoscale: {min_waiting_jobs: 0, target_wait: 30m, scale_down_below: 0.5}
"""


@pytest.fixture()
def policy(tmp_path):
    p = tmp_path / "policy.yaml"
    p.write_text(POLICY)
    return load_policy(str(p))


def rows(version: str):
    return parse_sacct((DATA / f"sacct-{version}" / "report.txt").read_text())


H = 3600.0


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_hand_computed_totals(version, policy):
    doc = report(rows(version), policy, by="class", since="S", until="E")
    t = doc["total"]
    gs = 26 + 56 + 4 * 19 + 4 * 49 + 2 * 2  # 358 GPU-seconds
    with_stats = 56 + 4 * 49  # 252
    effective = 0.5 * 56 + 0.45 * 4 * 49  # 116.2
    assert t["jobs"] == 9  # rows with GPUs: 30, 31, 6 runs of 32, 55 (41 has none)
    assert t["gpu_hours"] == pytest.approx(gs / H, abs=1e-6)
    assert t["gpu_hours_with_stats"] == pytest.approx(with_stats / H, abs=1e-6)
    assert t["gpu_hours_without_stats"] == pytest.approx((gs - with_stats) / H, abs=1e-6)
    assert t["effective_gpu_hours"] == pytest.approx(effective / H, abs=1e-6)
    assert t["efficiency"] == pytest.approx(116.2 / 252, abs=1e-6)  # 0.461111
    assert t["efficiency"] != pytest.approx((0.5 + 0.45) / 2, abs=1e-3)  # never the mean of per-job means
    assert t["idle_gpu_hours"] == pytest.approx((252 - 116.2) / H, abs=1e-6)
    assert t["preemptions"] == 5 and t["preempted_gpu_hours"] == pytest.approx(4 * 19 / H, abs=1e-6)
    h, a = doc["types"]["h100"], doc["types"]["a100"]
    assert h["gpu_hours"] == pytest.approx(86 / H, abs=1e-6) and h["efficiency"] == 0.5
    assert a["gpu_hours"] == pytest.approx(272 / H, abs=1e-6) and a["efficiency"] == 0.45
    assert h["cost_per_effective_gpu_hour"] == 6.0 and a["cost_per_effective_gpu_hour"] == 4.0  # 3/0.5, 1.8/0.45
    assert h["cost"] == pytest.approx(3.0 * 86 / H, abs=1e-4) and doc["currency"] == "EUR"
    assert t["cost"] == pytest.approx((3.0 * 86 + 1.8 * 272) / H, abs=1e-4)
    # classes: spot/spot is the policy's class "scavenger"; the rest by partition
    assert set(doc["groups"]) == {"batch", "interactive", "scavenger"}
    assert doc["groups"]["scavenger"]["efficiency"] == 0.45
    # waits: interactive 14, 14 (30, 31) and 0 (41); scavenger 2, 14, 11, 12, 12, 12; batch 0
    assert doc["wait"]["interactive"] == {"jobs": 3, "p50_seconds": 14.0, "p95_seconds": 14.0}
    assert doc["wait"]["scavenger"] == {"jobs": 6, "p50_seconds": 12.0, "p95_seconds": 14.0}
    assert doc["wait"]["batch"]["p50_seconds"] == 0.0
    text = "\n".join(lines(doc))
    assert "E = 46.1%" in text and "6.00 EUR" in text and "4.00 EUR" in text


def test_without_policy_groups_by_partition_and_has_no_cost():
    doc = report(rows("22.05"), None, by="partition")
    assert set(doc["groups"]) == {"batch", "interactive", "spot"}
    assert "cost" not in doc["total"] and "cost_per_effective_gpu_hour" not in doc["types"]["h100"]
    assert set(doc["wait"]) == {"batch", "interactive", "spot"}


def test_no_stats_at_all_gives_no_efficiency():
    doc = report([r | {"AdminComment": ""} for r in rows("22.05")])
    assert doc["total"]["efficiency"] is None and doc["total"]["effective_gpu_hours"] == 0.0
    assert doc["total"]["gpu_hours_without_stats"] == doc["total"]["gpu_hours"]


def test_percentile_nearest_rank():
    assert percentile([], 50) is None
    assert percentile([5.0], 95) == 5.0
    assert percentile([float(x) for x in range(1, 101)], 95) == 95.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0


def test_sacct_parsers():
    assert tres_gpus("billing=4,cpu=4,gres/gpu:h100=1,gres/gpu=1,mem=60G,node=1") == {"h100": 1}
    assert tres_gpus("cpu=4,gres:gpu=1,gres:gpu:h100=1") == {"h100": 1}
    assert tres_gpus("gres/gpu=3,gres/gpu:a100=2") == {"a100": 2, "gpu": 1}
    assert tres_gpus("gres/gpu=2") == {"gpu": 2}
    assert tres_gpus("gres/gpu:a100_1g.10gb=3") == {"a100_1g.10gb": 3}  # MIG slices, typed only
    assert tres_gpus("gres/gpumem=4G,gres/gpu=1") == {"gpu": 1}  # gpumem is no GPU
    assert tres_gpus("") == {} and tres_gpus(None) == {}
    assert sacct_seconds("00:01.006") == pytest.approx(1.006)
    assert sacct_seconds("1-02:03:04") == 93784 and sacct_seconds("02:03:04") == 7384
    assert sacct_seconds("INVALID") is None and sacct_seconds("") is None and sacct_seconds("5") is None
    assert sacct_bytes("15968K") == 15968 * 1024 and sacct_bytes("60G") == 60 << 30
    assert sacct_bytes("4000Mc") == 4000 << 20 and sacct_bytes("") is None and sacct_bytes("x") is None
    assert sacct_time("2026-12-01T03:27:56") - sacct_time("2026-12-01T03:27:42") == 14
    assert sacct_time("Unknown") is None and sacct_time("None") is None
    text = "A|B\n1|x|y\n2\n"  # the last column keeps its "|"; a short line is skipped
    assert parse_sacct(text) == [{"A": "1", "B": "x|y"}]


def test_by_rejects_unknown_key():
    with pytest.raises(ValueError):
        report([], by="colour")


def test_cli_usage_errors_are_one_line():
    exe = [sys.executable, "-m", "slurm_gpu.cli.main", "report"]
    p = subprocess.run([*exe, "--since", "yesterday-ish"], capture_output=True, text=True, timeout=60, check=False)
    assert p.returncode == 2 and "--since" in p.stderr and "Traceback" not in p.stderr
    p = subprocess.run([*exe, "--by", "colour"], capture_output=True, text=True, timeout=60, check=False)
    assert p.returncode == 2


def test_json_is_serialisable(policy):
    doc = report(rows("22.05"), policy, by="user")
    assert json.loads(json.dumps(doc))["groups"]["labuser"]["jobs"] == 9


@pytest.mark.parametrize("change, found", [
    ("per_gpu_hour: 3.0, currency: EUR", "per_gpu_hour: found -1"),
    ("name: h100, per", "found GPU type 'v100' which is not defined"),
    ("scale_down_below: 0.5", "scale_down_below: found 1.5"),
    ("target_wait: 10s", "target_wait: found"),
])
def test_policy_prices_and_autoscale_are_validated(tmp_path, change, found):
    from slurm_gpu.errors import PolicyError

    bad = {"per_gpu_hour: 3.0, currency: EUR": "per_gpu_hour: -1, currency: EUR", "name: h100, per": "name: v100, per",
           "scale_down_below: 0.5": "scale_down_below: 1.5", "target_wait: 10s": "target_wait: soon"}[change]
    p = tmp_path / "policy.yaml"
    p.write_text(POLICY.replace(change, bad))
    with pytest.raises(PolicyError) as exc:
        load_policy(str(p))
    assert found in str(exc.value) and f"{p}:" in str(exc.value)


def test_policy_defaults(tmp_path):
    p = tmp_path / "policy.yaml"
    p.write_text("version: 1\nname: bare\n")
    pol = load_policy(str(p))
    assert pol.prices == () and pol.autoscale.scale_down_below == 0.7 and pol.autoscale.target_wait_s == 3600
    assert pol.autoscale.min_waiting_jobs == 0


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_one_pass_over_streamed_rows_gives_each_report(version, policy):
    # the rows as the report reads them now: lines as they come, parsed one by one, read once for
    # every grouping; the documents equal report()'s over the whole list
    text = (DATA / f"sacct-{version}" / "report.txt").read_text()
    taken: list[str] = []

    def lines():
        for line in text.split("\n"):
            taken.append(line)
            yield line

    rows = iter_sacct(lines())
    assert len(taken) == 0  # nothing read before the first row is asked for
    first = next(rows)
    assert first["JobID"] == "30" and len(taken) == 2  # the header and one row
    bys = ("class", "account", None, "user", "partition")
    docs = reports(__import__("itertools").chain([first], rows), policy, bys, "S", "E")
    assert len(taken) == len(text.split("\n"))
    for by, doc in zip(bys, docs, strict=True):
        assert doc == report(parse_sacct(text), policy, by, "S", "E")
    docs[0]["total"]["jobs"] = -1  # each document owns its dicts
    assert docs[1]["total"]["jobs"] == 9


def test_counted_percentile_is_the_nearest_rank_percentile():
    import random
    from collections import Counter

    rng = random.Random(5)
    for n in (1, 2, 3, 10, 101, 1000):
        values = [float(rng.choice((0, 1, 2, 14, 30, 600, 86400))) for _ in range(n)]
        for p in (50, 95, 99, 100):
            assert counted_percentile(Counter(values), p) == percentile(values, p)
    assert counted_percentile({}, 50) is None


def test_sacct_time_fast_form_is_fromisoformat_s():
    from datetime import UTC, datetime

    for text in ("2026-12-01T03:27:42", "1999-12-31T23:59:59", "2024-02-29T00:00:00", "2026-12-01T00:00:00"):
        assert sacct_time(text) == datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()
    for bad in ("2026-13-01T00:00:00", "2026-12-01T24:00:00", "2026-12-01T23:59:60", "2023-02-29T00:00:00"):
        assert sacct_time(bad) is None
    assert sacct_time("2026-12-01T03:27:42 ") == sacct_time("2026-12-01T03:27:42")  # the slow path strips
