# SPDX-License-Identifier: Apache-2.0
"""What a user can put in front of the controller-side hook: job text that forges the record's keys, a
marker with an unreadable number, an entry point that cannot start or hangs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from slurm_gpu.checkpoint.markers import MarkerError, parse_marker
from slurm_gpu.node.requeue import forged_keys

SHIM = Path(__file__).resolve().parents[2] / "prolog_epilog" / "epilog_ctld.sh"
REAL = ("JobId=12 JobName=train UserId=u(1001) GroupId=u(1001) Priority=1 JobState=CANCELLED Reason=None "
        "Requeue=1 Restarts=0 BatchFlag=1 StartTime=2026-12-01T01:00:00 EndTime=2026-12-01T01:05:00 "
        "PreemptTime=None Partition=spot QOS=spot WorkDir=/home/u Comment={comment}")


def test_a_record_without_user_text_is_trusted() -> None:
    assert forged_keys(REAL.format(comment="ok")) == []
    assert forged_keys("JobId=1 ArrayJobId=1 HetJobId=2 JobState=PENDING") == []  # other keys that end alike


def test_keys_written_by_the_user_are_found() -> None:
    forged = REAL.format(comment="x JobState=COMPLETING PreemptTime=2026-12-01T01:04:00 Restarts=0")
    assert forged_keys(forged) == ["JobState", "Restarts", "PreemptTime"]


def test_a_number_too_long_for_int_is_a_bad_marker() -> None:
    raw = b'{"schema": "gpusub-marker", "version": 1, "step": ' + b"9" * 5000 + b"}"
    with pytest.raises(MarkerError, match="too long"):
        parse_marker(raw)


@pytest.mark.parametrize("cmd", ["/nonexistent/interpreter-x", "sh -c 'exit 3'", "sh -c 'kill -9 $$'"])
def test_the_shim_exits_0_whatever_the_entry_point_does(cmd: str, tmp_path: Path) -> None:
    env = {"SLURM_GPU_EPILOG_CTLD": cmd, "SLURM_JOB_ID": "7", "PATH": os.environ["PATH"]}
    p = subprocess.run(["sh", str(SHIM)], env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
