# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu jobstats``'s numbers and notes, by hand, on recorded ``sacct -a -P -j`` text of the lab's
Slurm 22.05.8 (tests/cluster/data/sacct-22.05):

- jobstats-31.txt: job 31 (h100 x1, 4 CPUs, 56 s, TotalCPU 00:01.006, AllocTRES mem=60G, step MaxRSS
  15968K and 4656K, limit 2 min) with the summary of one GPU at 50 %, peak 9 GB, 14,000 J;
- jobstats-array.txt: array 104 (tasks 104_1..104_3, 3 s each, h100 x1); task 104_1's summary says
  90 %, 104_3's 10 %, 104_2 has none.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_gpu.cluster.jobstats import jobstats, lines
from slurm_gpu.cluster.summary_codec import encode
from slurm_gpu.policy import load_policy
from slurm_gpu.slurm.sacct import parse_sacct
from tests.cluster.test_report import POLICY

DATA = Path(__file__).resolve().parent / "data" / "sacct-22.05"


@pytest.fixture()
def policy(tmp_path):
    p = tmp_path / "policy.yaml"
    p.write_text(POLICY)
    return load_policy(str(p))


def job31(**changes: str) -> list[dict[str, str]]:
    rows = parse_sacct((DATA / "jobstats-31.txt").read_text())
    rows[0] = rows[0] | changes
    return rows


def test_job_31_by_hand():
    doc = jobstats(job31())
    (j,) = doc["jobs"]
    assert "array" not in doc
    assert j["gpus"] == 1 and j["gpu_types"] == {"h100": 1} and j["gpu_hours"] == round(56 / 3600, 6)
    assert j["gpu_utilization"] == 0.5 and j["energy_joules"] == 14000.0
    assert j["gpu"] == [{"node": "h100n2", "index": 0, "utilization": 0.5, "memory_utilization": 0.2,
                         "max_memory_bytes": 9_000_000_000, "energy_joules": 14000.0}]
    assert j["cpu_seconds"] == 1.006 and j["cpu_efficiency"] == round(1.006 / (56 * 4), 4)
    assert j["memory_bytes"] == 60 << 30 and j["max_rss_bytes"] == 15968 * 1024
    assert j["memory_efficiency"] == round(15968 * 1024 / (60 << 30), 4)
    assert j["time_limit_seconds"] == 120 and j["notes"] == []  # under 300 s: no notes (jobstats' rule)


def test_notes_carry_numbers(policy):
    long = job31(ElapsedRaw="3600", Elapsed="01:00:00", Timelimit="1-00:00:00")
    (j,) = jobstats(long, policy)["jobs"]
    assert j["notes"] == [
        "peak GPU memory 9 GB of 80: a 1g.10gb MIG slice would do",
        "asked 4 cores, used 1 (CPU efficiency 0%)",
        "asked 60G of memory per node, peak 0.02G: --mem=1G would do",
        "used 4% of the 24 h time limit",
    ]
    idle = encode({"h100n2": [{"gpu_index": 3, "gpu_util_pct": 8.0, "start": 0.0, "end": 3600.0}]})
    (j,) = jobstats(job31(ElapsedRaw="3600", AdminComment=idle))["jobs"]
    assert j["notes"][0] == "GPU 3 on h100n2 idle 92% of the time"
    unused = encode({"h100n2": [{"gpu_index": 0, "gpu_util_pct": 0.0}]})
    (j,) = jobstats(job31(ElapsedRaw="3600", AdminComment=unused))["jobs"]
    assert j["notes"][0] == "GPU 0 on h100n2 was not used (0% utilisation)"
    # without a policy the GPU's size is unknown: no MIG advice
    (j,) = jobstats(long)["jobs"]
    assert not any("MIG" in n for n in j["notes"])


def test_array_is_summarised_per_array():
    doc = jobstats(parse_sacct((DATA / "jobstats-array.txt").read_text()))
    assert [j["job_id"] for j in doc["jobs"]] == ["104_1", "104_2", "104_3"]
    arr = doc["array"]
    assert arr["tasks"] == 3 and arr["states"] == {"COMPLETED": 3}
    assert arr["gpu_hours"] == pytest.approx(3 * 3 / 3600, abs=1e-6)
    assert arr["gpu_hours_with_stats"] == pytest.approx(2 * 3 / 3600, abs=1e-6)
    assert arr["gpu_utilization"] == 0.5  # (0.9 x 3 + 0.1 x 3) / 6 GPU-seconds
    cpu = 1.982 + 2.132 + 2.029
    assert arr["cpu_efficiency"] == round(cpu / (3 * 2 * 3), 4)
    text = "\n".join(lines(doc))
    assert "array: 3 tasks (COMPLETED 3)" in text and "GPU utilisation 50%" in text
    assert "no slurm-gpu summary" in text  # 104_2


def test_foreign_admin_comment_is_no_stats():
    (j,) = jobstats(job31(AdminComment="JS1:H4sIAAAAAAAAA6tWKkktLlGyUkpKLVGqBQB3Qw6bEAAAAA=="))["jobs"]
    assert j["gpu_stats"] is False and j["gpu_utilization"] is None and j["gpu"] == []


def test_job_id_forms():
    from slurm_gpu.cluster.jobstats_io import normalise_job_id
    from slurm_gpu.errors import UsageError

    assert normalise_job_id("104_*") == "104" and normalise_job_id("104_2") == "104_2"
    for bad in ("", "abc", "1;rm", "104_", "1\n", "1" * 11):
        with pytest.raises(UsageError):
            normalise_job_id(bad)


def test_no_cpu_or_memory_efficiency_while_running():
    (j,) = jobstats(job31(State="RUNNING", ElapsedRaw="3600"))["jobs"]
    assert j["cpu_efficiency"] is None and j["memory_efficiency"] is None
    assert not any(n.startswith(("asked", "used")) for n in j["notes"])
