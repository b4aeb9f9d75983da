# SPDX-License-Identifier: Apache-2.0
"""``jobstats`` and ``report`` in the lab, on summaries stored in AdminComment the two ways Slurm 22.05
allows, and read back through sacct (cluster-wide, no other store):

- job A (h100 x2) while RUNNING: root runs ``scontrol update jobid=A admincomment=<merge(...)>`` (what a
  node epilog does while the job completes); the text is kept as is;
- job B (h100 x1) once COMPLETED: ``scontrol update`` is refused on 22.05 ("Job has already finished"),
  so root runs ``sacctmgr -i modify job where jobid=B set AdminComment=...``, which lower-cases the text
  (the base32 codec reads it back).

The test reads each job's ElapsedRaw with its own sacct call and computes U, E, idle GPU-hours and the
cost per effective GPU-hour by hand. Jobs are the lab user's, cancelled by id at the end.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from slurm_gpu.cluster.summary_codec import decode, merge

pytestmark = pytest.mark.slurm

POLICY = """version: 1
name: labprices
gpu_types:
  - {name: h100, memory_gb: 80}
prices:
  - {name: h100, per_gpu_hour: 3.0, currency: EUR}
"""


def sacct_row(slurm_lab, job_id: int, fields: str) -> list[str]:
    r = slurm_lab.run(["sacct", "-a", "-X", "-n", "-P", "-j", str(job_id), "-o", fields], as_root=True, check=True)
    return r.stdout.strip().splitlines()[-1].split("|")


def wait_state(slurm_lab, job_id: int, states: set[str], timeout_s: float = 60) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        r = slurm_lab.run(["squeue", "-h", "-j", str(job_id), "-o", "%T"], as_root=True)
        state = r.stdout.strip() or sacct_row(slurm_lab, job_id, "State")[0].split(" ")[0]
        if state in states:
            return state
        time.sleep(0.3)
    pytest.fail(f"job {job_id} not in {states} after {timeout_s} s")


def cli(slurm_lab, *args: str) -> dict:
    r = subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", *args], capture_output=True, text=True,
                       env=slurm_lab.env(), timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def rec(index: int, util: float, seconds: float) -> dict:
    return {"gpu_index": index, "gpu_util_pct": util, "mem_util_pct": 10.0, "max_memory_bytes": 8_000_000_000,
            "energy_j": 500.0, "start": 1000.0, "end": 1000.0 + seconds}


def test_admin_comment_round_trip_through_sacct(slurm_lab, tmp_path):
    wd = slurm_lab.workdir("report")
    a = slurm_lab.sbatch(["-p", "batch", "--gres=gpu:h100:2", "-c", "2", "-t", "5", "-o", "/dev/null",
                          "--wrap", "sleep 6"], cwd=wd)
    b = slurm_lab.sbatch(["-p", "batch", "--gres=gpu:h100:1", "-c", "1", "-t", "5", "-o", "/dev/null",
                          "--wrap", "sleep 1"], cwd=wd)
    try:
        wait_state(slurm_lab, a, {"RUNNING"})
        node_a = slurm_lab.run(["squeue", "-h", "-j", str(a), "-o", "%N"], as_root=True).stdout.strip()
        text_a = merge(None, node_a, [rec(0, 60.0, 10), rec(1, 20.0, 10)])  # U_A = 0.4
        assert text_a is not None
        up = slurm_lab.run(["scontrol", "update", f"jobid={a}", f"admincomment={text_a}"], as_root=True)
        assert up.returncode == 0, up.stderr
        # a second node's epilog merging into what the first wrote keeps both
        assert decode(merge(text_a, "other", [rec(0, 0.0, 1)])).gpus == 3

        assert wait_state(slurm_lab, b, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}) == "COMPLETED"
        text_b = merge("", "h100nX", [rec(0, 90.0, 5)])  # U_B = 0.9
        late = slurm_lab.run(["scontrol", "update", f"jobid={b}", f"admincomment={text_b}"], as_root=True)
        if slurm_lab.version[:2] == (22, 5):  # measured on 22.05.8: a finished job's AdminComment is read-only
            assert late.returncode != 0 and "already finished" in late.stderr
        mod = slurm_lab.run(["sacctmgr", "-i", "modify", "job", "where", f"jobid={b}", "set",
                             f"AdminComment={text_b}"], as_root=True)
        assert mod.returncode == 0, mod.stdout + mod.stderr
        stored_b = sacct_row(slurm_lab, b, "AdminComment")[0]
        assert stored_b.upper() == text_b.upper() and decode(stored_b) is not None

        assert wait_state(slurm_lab, a, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}, 60) == "COMPLETED"
        deadline = time.monotonic() + 30
        while sacct_row(slurm_lab, a, "AdminComment")[0] != text_a and time.monotonic() < deadline:
            time.sleep(0.5)  # slurmdbd gets the job record (with its AdminComment) at the end
        assert sacct_row(slurm_lab, a, "AdminComment")[0] == text_a  # scontrol's path keeps the case
        t_a = int(sacct_row(slurm_lab, a, "ElapsedRaw")[0])
        t_b = int(sacct_row(slurm_lab, b, "ElapsedRaw")[0])
        assert t_a > 0 and t_b > 0

        js = cli(slurm_lab, "jobstats", str(a), "--json")
        (ja,) = js["jobs"]
        assert ja["gpus"] == 2 and ja["gpu_utilization"] == 0.4 and ja["elapsed_seconds"] == t_a
        assert [(g["index"], g["utilization"]) for g in ja["gpu"]] == [(0, 0.6), (1, 0.2)]
        assert ja["energy_joules"] == 1000.0

        policy = tmp_path / "prices.yaml"
        policy.write_text(POLICY)
        doc = cli(slurm_lab, "report", "--since", "1h", "--jobs", f"{a},{b}", "--json", "--policy", str(policy))
        gs, eff = 2 * t_a + t_b, 0.4 * 2 * t_a + 0.9 * t_b
        t = doc["total"]
        assert t["jobs"] == 2 and t["gpu_hours"] == pytest.approx(gs / 3600, abs=1e-6)
        assert t["effective_gpu_hours"] == pytest.approx(eff / 3600, abs=1e-6)
        assert t["efficiency"] == pytest.approx(eff / gs, abs=1e-6)
        assert t["idle_gpu_hours"] == pytest.approx((gs - eff) / 3600, abs=1e-6)
        assert doc["types"]["h100"]["cost_per_effective_gpu_hour"] == pytest.approx(3.0 / (eff / gs), abs=1e-3)
        # --html reads the streamed rows once for both of its documents: the same figures
        html = tmp_path / "report.html"
        again = cli(slurm_lab, "report", "--since", "1h", "--jobs", f"{a},{b}", "--json", "--policy", str(policy),
                    "--html", str(html))
        assert {k: v for k, v in again.items() if k not in ("since", "until")} == {
            k: v for k, v in doc.items() if k not in ("since", "until")}
        # the by-account chart, from the same pass: the lab account's allocated and effective GPU-hours
        page = html.read_text()
        assert f'data-value="{float(t["gpu_hours"])!r}"' in page
        assert f'data-value="{float(t["effective_gpu_hours"])!r}"' in page
    finally:
        slurm_lab.cancel(a, b)


def test_completing_job_takes_admin_comment_only_through_sacctmgr(slurm_lab):
    """Where a node epilog runs: the job is COMPLETING (held here by a payload that ignores SIGTERM, for
    KillWait after scancel). On 22.05 scontrol refuses the update; sacctmgr takes it and it stays."""
    wd = slurm_lab.workdir("completing")
    j = slurm_lab.sbatch(["-p", "batch", "--gres=gpu:h100:1", "-c", "1", "-t", "5", "-o", "/dev/null",
                          "--wrap", 'trap "" TERM; sleep 120'], cwd=wd)
    try:
        wait_state(slurm_lab, j, {"RUNNING"})
        slurm_lab.cancel(j)
        assert wait_state(slurm_lab, j, {"COMPLETING"}, 10) == "COMPLETING"
        text = merge(None, "h100n1", [rec(0, 75.0, 4)])
        assert text is not None
        up = slurm_lab.run(["scontrol", "update", f"jobid={j}", f"admincomment={text}"], as_root=True)
        if slurm_lab.version[:2] == (22, 5):
            assert up.returncode != 0 and "already finished" in up.stderr
        mod = slurm_lab.run(["sacctmgr", "-i", "modify", "job", "where", f"jobid={j}", "set",
                             f"AdminComment={text}"], as_root=True)
        assert mod.returncode == 0, mod.stdout + mod.stderr
        still = slurm_lab.run(["squeue", "-h", "-j", str(j), "-o", "%T"], as_root=True).stdout.strip()
        deadline = time.monotonic() + 90
        while slurm_lab.run(["squeue", "-h", "-j", str(j), "-o", "%T"], as_root=True).stdout.strip():
            assert time.monotonic() < deadline, "job still listed by squeue"
            time.sleep(0.5)
        stored = sacct_row(slurm_lab, j, "AdminComment")[0]
        summary = decode(stored)
        assert summary is not None and summary.utilisation() == 0.75, (still, stored)
    finally:
        slurm_lab.cancel(j)


def test_autoscale_counts_a_pending_gpu_job(slurm_lab):
    wd = slurm_lab.workdir("autoscale")
    held = slurm_lab.sbatch(["--hold", "-p", "batch", "--gres=gpu:h100:3", "-t", "5", "-o", "/dev/null",
                             "--wrap", "true"], cwd=wd)
    try:
        fields, _ = slurm_lab.show_job(held)
        assert fields["JobState"] == "PENDING"
        doc = cli(slurm_lab, "report", "--autoscale", "--since", "1h", "--json")
        h100 = doc["types"]["h100"]
        assert doc["schema"] == "slurm-gpu.autoscale/1" and h100["pending_jobs"] >= 1 and h100["pending_gpus"] >= 3
        assert h100["recommendation"] in ("up", "down", "hold")
    finally:
        slurm_lab.cancel(held)
