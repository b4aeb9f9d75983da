# SPDX-License-Identifier: Apache-2.0
"""A summary in AdminComment that breaks Python's own limits, stored through the real slurmdbd: a
4,000-digit integer (json reads it; float() of it raised OverflowError) and nesting past the recursion
limit. ``jobstats`` and ``report`` read it through sacct and show the job without GPU figures (exit 0,
no traceback). The job is the lab user's; root stores the comment as a node Epilog would."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
import zlib

import pytest

from slurm_gpu.cluster.summary_codec import PREFIX

pytestmark = pytest.mark.slurm


def _packed(raw: bytes) -> str:
    return PREFIX + base64.b32encode(zlib.compress(raw, 9)).decode().rstrip("=")


def cli(slurm_lab, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", *args], capture_output=True, text=True,
                          env=slurm_lab.env(), timeout=60, check=False)


@pytest.mark.parametrize("raw", [b'{"v":1,"n":{"h100n1":[[0,' + b"9" * 4000 + b',1,2,3,4]]},"x":0}',
                                 b'{"v":1,"n":{"h100n1":' + b"[" * 50_000 + b"]" * 50_000 + b"},\"x\":0}"],
                         ids=["4000-digits", "deep"])
def test_jobstats_and_report_survive_a_hostile_summary(slurm_lab, raw):
    text = _packed(raw)
    assert len(text) < 60_000
    j = slurm_lab.sbatch(["-p", "batch", "-t", "1", "-o", "/dev/null", "--wrap", "true"])
    try:
        deadline = time.monotonic() + 60
        while slurm_lab.run(["sacct", "-a", "-X", "-n", "-P", "-j", str(j), "-o", "State"]).stdout.strip() \
                != "COMPLETED":
            assert time.monotonic() < deadline, "job did not complete"
            time.sleep(0.5)
        mod = slurm_lab.run(["sacctmgr", "-i", "modify", "job", "where", f"jobid={j}", "set",
                             f"AdminComment={text}"], as_root=True)
        assert mod.returncode == 0, mod.stdout + mod.stderr
        stored = slurm_lab.run(["sacct", "-a", "-X", "-n", "-P", "-j", str(j), "-o", "AdminComment"]).stdout.strip()
        assert stored.upper() == text.upper()
        for args in ((), ("--json",)):
            js = cli(slurm_lab, "jobstats", str(j), *args)
            assert js.returncode == 0 and "Traceback" not in js.stderr, js.stderr
        (row,) = json.loads(js.stdout)["jobs"]
        assert row["job_id"] == str(j) and row["gpu_stats"] is False and row["gpu"] == []
        rep = cli(slurm_lab, "report", "--since", "1h", "--jobs", str(j), "--json")
        assert rep.returncode == 0 and "Traceback" not in rep.stderr, rep.stderr
        assert "total" in json.loads(rep.stdout)  # (a job without GPUs counts for nothing there)
    finally:
        slurm_lab.cancel(j)
