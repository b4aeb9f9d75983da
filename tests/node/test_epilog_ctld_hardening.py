# SPDX-License-Identifier: Apache-2.0
"""What a user can put in front of the controller-side hook: job text that would forge the record's keys,
a marker with an unreadable number, an entry point that cannot start or hangs. (The hook reads the job from
``squeue -O`` fields that hold no user text, then from squeue's JSON: tests/hooks/test_epilog_ctld_lab.py
runs both against a job whose name forges every key.)"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from slurm_gpu.checkpoint.markers import MarkerError, parse_marker
from slurm_gpu.node.requeue import cause_of, facts_from
from slurm_gpu.slurm.records import parse_squeue_job

SHIM = Path(__file__).resolve().parents[2] / "prolog_epilog" / "epilog_ctld.sh"
ENV = {"SLURM_JOB_ID": "12", "SLURM_JOB_UID": "1001", "SLURM_JOB_RESTART_COUNT": "0"}


def test_the_work_dir_is_the_only_user_text_and_comes_last() -> None:
    """``squeue -O`` of an admin-cancelled job whose work dir forges a preempted record after a separator."""
    forged = "/home/u/x|\n12|COMPLETING|None|0|1|1|2026-12-01T01:04:00|2026-12-01T01:00:00|spot|spot|1001||0:1|0:0|/w"
    out = f"12|COMPLETING|None|0|1|1|N/A|2026-12-01T01:00:00|spot|spot|1001|h100n1|5:00|0:15|{forged}|\n"
    rec = parse_squeue_job(out, 12)
    assert rec is not None and rec["WorkDir"] == forged and rec["PreemptTime"] == "None"
    job = facts_from(ENV, rec, None)
    assert job is not None and not job.preempted and cause_of(job) == (
        None, "ended on its own or was cancelled (state COMPLETING, reason None)")


def test_a_number_too_long_for_int_is_a_bad_marker() -> None:
    raw = b'{"schema": "gpusub-marker", "version": 1, "step": ' + b"9" * 5000 + b"}"
    with pytest.raises(MarkerError, match="too long"):
        parse_marker(raw)


@pytest.mark.parametrize("cmd", ["/nonexistent/interpreter-x", "sh -c 'exit 3'", "sh -c 'kill -9 $$'"])
def test_the_shim_exits_0_whatever_the_entry_point_does(cmd: str, tmp_path: Path) -> None:
    env = {"SLURM_GPU_EPILOG_CTLD": cmd, "SLURM_JOB_ID": "7", "PATH": os.environ["PATH"]}
    p = subprocess.run(["sh", str(SHIM)], env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
