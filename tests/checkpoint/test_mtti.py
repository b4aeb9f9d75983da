# SPDX-License-Identifier: Apache-2.0
"""The partition MTTI from accounting: the estimator on sacct's text, and ``ckpt advise --partition``
against the real lab (a job of ours requeued with ``scontrol requeue``: a run record in state REQUEUED)."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from slurm_gpu.checkpoint.mtti import estimate
from slurm_gpu.cli.main import cli

# sacct -a -X -D -P -n -o JobIDRaw,State,Elapsed, in the lab's own spelling (states, "CANCELLED by 0")
TEXT = """\
1383|REQUEUED|00:00:03
1383|CANCELLED by 0|00:00:00
1390|PREEMPTED|01:00:00
1390|COMPLETED|02:00:00
1391|NODE_FAIL|1-00:00:00
1392|TIMEOUT|00:30:57
1393|RUNNING|00:10:00
garbage line
1394|COMPLETED|INVALID
"""


def test_estimate_by_hand() -> None:
    est = estimate(TEXT)
    # runs: 7 with an elapsed time; exposure 3 + 0 + 3600 + 7200 + 86400 + 1857 + 600 = 99660 s
    assert (est.runs, est.exposure_s, est.skipped) == (7, 99660.0, 2)
    # interruptions: REQUEUED, PREEMPTED, NODE_FAIL = 3 -> MTTI = 99660 / 3 = 33220 s
    assert est.interruptions == 3 and est.mtti_s == 33220.0
    assert est.by_state == (("NODE_FAIL", 1), ("PREEMPTED", 1), ("REQUEUED", 1))


def test_no_interruption_no_mtti() -> None:
    assert estimate("1|COMPLETED|00:01:00\n").mtti_s is None
    assert estimate("").runs == 0


def test_usage() -> None:
    r = CliRunner().invoke(cli, ["ckpt", "advise", "--cost", "60"])
    assert r.exit_code == 2 and "give one of --mtti DURATION and --partition P" in r.output
    r = CliRunner().invoke(cli, ["ckpt", "advise", "--cost", "60", "--mtti", "6h", "--partition", "batch"])
    assert r.exit_code == 2
    r = CliRunner().invoke(cli, ["ckpt", "advise", "--cost", "60", "--partition", "x y"])
    assert r.exit_code == 2 and "--partition 'x y'" in r.output


@pytest.mark.slurm
def test_partition_mtti_counts_a_requeued_run(slurm_lab, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from slurm_gpu.adapters.slurm.runner import run_slurm

    for k, v in slurm_lab.env().items():
        monkeypatch.setenv(k, v)
    work = slurm_lab.workdir("mtti")
    job = slurm_lab.sbatch(["-p", "batch", "-t", "2", "-o", "/dev/null", "--requeue", "--wrap", "sleep 60"], cwd=work)
    try:
        slurm_lab.wait(job, {"RUNNING"}, timeout_s=60)
        time.sleep(2)  # an elapsed time of a few seconds
        # requeuehold: the job stays pending (held) while accounting is read, so neither a second run nor the
        # cancel below can race the reads (a cancel may be recorded over the pending run's record)
        assert slurm_lab.run(["scontrol", "requeuehold", str(job)], timeout_s=20).returncode == 0
        deadline = time.monotonic() + 30
        while True:
            text = run_slurm(["sacct", "-X", "-D", "-P", "-n", "-j", str(job), "-o", "JobIDRaw,State,Elapsed"],
                             timeout_s=30, check=True).stdout
            est = estimate(text)
            if est.interruptions or time.monotonic() > deadline:
                break
            time.sleep(1)
        # the requeued run (and, once slurmdbd has it, the held pending one with 0 s)
        assert est.by_state == (("REQUEUED", 1),) and est.runs in (1, 2) and est.exposure_s >= 1, text
        # the whole partition (other engineers' jobs too): at least ours is counted, and advise works from it
        while True:
            r = CliRunner().invoke(cli, ["ckpt", "advise", "--cost", "1", "--partition", "batch", "--since",
                                         "now-1hour", "--json"])
            if r.exit_code == 0 or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert r.exit_code == 0, r.output
    finally:
        slurm_lab.cancel(job)
    data = json.loads(r.output)
    assert data["mtti_s"] > 0 and data["daly_s"] < data["young_s"]
