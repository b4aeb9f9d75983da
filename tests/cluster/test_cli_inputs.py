# SPDX-License-Identifier: Apache-2.0
"""Bad values on the command line of `cluster` and `why`: one line, exit 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from slurm_gpu.cli.main import cli
from slurm_gpu.sim.traces import format_time

RECORDS = str(Path(__file__).parent / "data" / "lab-22.05")


@pytest.mark.parametrize("value", ["nan", "1e300", "0.1"])
def test_cluster_watch_takes_a_finite_interval(value: str) -> None:
    r = CliRunner().invoke(cli, ["cluster", "--records", RECORDS, "--watch", value])
    assert r.exit_code == 2 and "--watch" in r.output and "Traceback" not in r.output


def test_why_refuses_a_job_id_with_a_newline() -> None:
    r = CliRunner().invoke(cli, ["why", "123\n"])
    assert r.exit_code == 2 and "job id" in r.output


def test_a_simulated_time_beyond_year_9999_is_written_as_seconds() -> None:
    assert format_time(10**12, "%Y-%m-%d %H:%M:%S") == str(10**12)
    assert format_time(0, "%Y-%m-%d %H:%M:%S") == "1970-01-01 00:00:00"
