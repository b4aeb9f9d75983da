# SPDX-License-Identifier: Apache-2.0
"""SummaryStep (slurm_gpu/node/summary.py) when sacct/sacctmgr fail: recorder scripts stand in for
the clients ONLY for the failure cases (missing command, slurmdbd down, a hang, someone else's text,
the job not in accounting). What the step does against a real Slurm is tested in the lab:
tests/node/test_node_stats_lab.py."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from slurm_gpu.cluster.summary_codec import decode, encode
from slurm_gpu.node import summary as node_summary
from slurm_gpu.node.model import HookContext, Job, parse_config
from slurm_gpu.node.summary import SummaryStep

JOB = 4242
NODE = "h100n1"
REC = {"job_id": JOB, "node": NODE, "gpu_index": 0, "gpu_util_pct": 40.0, "mem_util_pct": 10.0,
       "max_memory_bytes": 1 << 30, "energy_j": 12.5, "start": 1000.0, "end": 1060.0}


def client(tmp: Path, name: str, body: str) -> str:
    """A stand-in client that appends its argv to ``calls`` and then runs ``body`` (sh)."""
    path = tmp / name
    path.write_text(f'#!/bin/sh\necho "{name} $*" >> "{tmp}/calls"\n{body}\n')
    path.chmod(0o755)
    return str(path)


def run_step(tmp: Path, sacct: str, sacctmgr: str, env: dict[str, str] | None = None,
             timeout_s: str = "60", state: dict | None = None) -> tuple[list[str], float]:
    cfg, problems = parse_config(f"sacct = {sacct}\nsacctmgr = {sacctmgr}\nnvml_timeout_s = {timeout_s}\n", "t", {})
    assert not problems
    logged: list[str] = []
    st = state if state is not None else {"accounting": {"lines": [json.dumps(REC) + "\n"]}}
    ctx = HookContext("epilog", Job(JOB, 1001, NODE, ("0",)), cfg, (), None, st, logged.append, time.time(), 0)
    t0 = time.monotonic()
    SummaryStep({"PATH": "/usr/bin:/bin", "SLURM_JOB_NODELIST": NODE, **(env or {})}, detach=False).epilog(ctx)
    assert not ctx.failures  # never a drain
    return logged, time.monotonic() - t0


def calls(tmp: Path) -> list[str]:
    p = tmp / "calls"
    return p.read_text().splitlines() if p.exists() else []


def test_missing_clients_are_one_log_line(tmp_path: Path):
    logged, _ = run_step(tmp_path, str(tmp_path / "no-sacct"), str(tmp_path / "no-sacctmgr"))
    (line,) = logged
    assert f"job {JOB}: summary in AdminComment: not stored:" in line and "command not found" in line


def test_slurmdbd_down_is_logged_and_nothing_written(tmp_path: Path):
    sacct = client(tmp_path, "sacct", 'echo "sacct: error: Problem talking to the database: Connection refused" >&2; '
                                      "exit 1")
    sacctmgr = client(tmp_path, "sacctmgr", "exit 0")
    (line,) = run_step(tmp_path, sacct, sacctmgr)[0]
    assert "not stored: sacct exit 1: sacct: error: Problem talking to the database" in line
    assert [c.split()[0] for c in calls(tmp_path)] == ["sacct"]  # no write after a failed read


def test_a_hung_client_is_cut_by_the_step_budget(tmp_path: Path):
    sacct = client(tmp_path, "sacct", "exec sleep 30")
    logged, took = run_step(tmp_path, sacct, client(tmp_path, "sacctmgr", "exit 0"), timeout_s="4")
    assert took < 4, took  # budget = nvml_timeout_s / 2 = 2 s
    assert "gave no answer within" in logged[0], logged


def test_someone_elses_admin_comment_is_left_alone(tmp_path: Path):
    sacct = client(tmp_path, "sacct", "echo 'JS1:H4sIAAAAAAAAA'")
    sacctmgr = client(tmp_path, "sacctmgr", "exit 0")
    (line,) = run_step(tmp_path, sacct, sacctmgr)[0]
    assert "someone else's text" in line and "JS1:" in line
    assert not [c for c in calls(tmp_path) if c.startswith("sacctmgr")]


def test_job_not_in_accounting_is_retried_then_logged(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(node_summary.time, "sleep", lambda s: None)
    sacct = client(tmp_path, "sacct", "exit 0")  # prints nothing: no such job
    (line,) = run_step(tmp_path, sacct, client(tmp_path, "sacctmgr", "exit 0"))[0]
    assert "not in accounting" in line
    assert len(calls(tmp_path)) == node_summary.ATTEMPTS and not any(c.startswith("sacctmgr") for c in calls(tmp_path))


def test_refused_write_is_logged(tmp_path: Path):
    sacct = client(tmp_path, "sacct", "echo")  # an empty AdminComment
    sacctmgr = client(tmp_path, "sacctmgr", "echo ' Nothing modified'; exit 1")
    (line,) = run_step(tmp_path, sacct, sacctmgr)[0]
    assert "not stored: sacctmgr exit 1: Nothing modified" in line
    (write,) = [c for c in calls(tmp_path) if c.startswith("sacctmgr")]
    assert write.startswith(f"sacctmgr -i modify job where jobid={JOB} set AdminComment=SG1:")


def test_a_write_that_does_not_stay_is_retried_a_bounded_number_of_times(tmp_path: Path, monkeypatch):
    """Another node keeps overwriting: sacct always shows only the other node's rows."""
    monkeypatch.setattr(node_summary.time, "sleep", lambda s: None)
    other = encode({"h100n2": [dict(REC, node="h100n2")]})
    sacct = client(tmp_path, "sacct", f"echo '{other.lower()}'")
    sacctmgr = client(tmp_path, "sacctmgr", "exit 0")
    (line,) = run_step(tmp_path, sacct, sacctmgr, env={"SLURM_JOB_NODELIST": "h100n[1-2]",
                                                       "SLURM_CLUSTER_NAME": "lab"})[0]
    assert f"did not stay after {node_summary.ATTEMPTS} attempts" in line
    writes = [c for c in calls(tmp_path) if c.startswith("sacctmgr")]
    assert len(writes) == node_summary.ATTEMPTS
    text = writes[0].rsplit("AdminComment=", 1)[1]
    assert writes[0].startswith(f"sacctmgr -i modify job where jobid={JOB} cluster=lab set ")
    assert sorted(decode(text).nodes) == ["h100n1", "h100n2"]  # merged with what it read, not overwritten
    assert all(" -M lab" in c for c in calls(tmp_path) if c.startswith("sacct "))


def test_off_and_without_records_nothing_runs(tmp_path: Path):
    sacct = client(tmp_path, "sacct", "echo")
    assert run_step(tmp_path, sacct, sacct, state={})[0] == []
    assert run_step(tmp_path, sacct, sacct, state={"accounting": {"lines": ["not json\n"]}})[0] == []
    cfg, _ = parse_config(f"admin_comment = no\nsacct = {sacct}\n", "t", {})
    ctx = HookContext("epilog", Job(JOB, 1001, NODE, ("0",)), cfg, (), None,
                      {"accounting": {"lines": [json.dumps(REC)]}}, print, time.time(), 0)
    SummaryStep({"PATH": os.environ.get("PATH", "")}, detach=False).epilog(ctx)
    assert calls(tmp_path) == []


@pytest.mark.parametrize(("nodes", "several"), [("h100n1", False), ("h100n[1-2]", True), ("a,b", True), ("", True)])
def test_multi_node_from_the_node_list(nodes: str, several: bool):
    assert node_summary.multi_node({"SLURM_JOB_NODELIST": nodes}) is several


def test_detached_the_epilog_returns_at_once_and_the_helper_logs(tmp_path: Path):
    """The default: the clients run in a process of its own, in a new session, output to /dev/null."""
    sacct = client(tmp_path, "sacct", "sleep 1; echo 'JS1:x'")
    log = tmp_path / "hooks.log"
    cfg, _ = parse_config(f"sacct = {sacct}\nsacctmgr = {sacct}\nlog = {log}\n", "t", {})
    logged: list[str] = []
    ctx = HookContext("epilog", Job(JOB, 1001, NODE, ("0",)), cfg, (), None,
                      {"accounting": {"lines": [json.dumps(REC)]}}, logged.append, time.time(), 0)
    t0 = time.monotonic()
    SummaryStep({"PATH": "/usr/bin:/bin", "SLURM_JOB_NODELIST": NODE,
                 "PYTHONPATH": str(Path(__file__).resolve().parents[2])}).epilog(ctx)
    assert time.monotonic() - t0 < 0.5 and logged == []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (log.exists() and "summary in AdminComment" in log.read_text()):
        time.sleep(0.1)
    text = log.read_text()
    assert f"job {JOB}: summary in AdminComment: AdminComment holds someone else's text" in text, text
    assert "the epilog paid" in text
    (call,) = calls(tmp_path)
    assert call.startswith(f"sacct -n -X -P -j {JOB} -o AdminComment")
