# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu cluster`` as a command: --records replay, --json, --watch (bounded), exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from slurm_gpu.cli.cluster import watch_loop

DATA = Path(__file__).resolve().parent / "data" / "lab-22.05"
EXE = [sys.executable, "-m", "slurm_gpu.cli.main", "cluster"]


def run(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    env = dict(os.environ) | (env_extra or {})
    return subprocess.run([*EXE, *args], capture_output=True, text=True, timeout=60, env=env, check=False)


def test_json_from_records():
    p = run("--json", "--records", str(DATA))
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["types"]["h100"]["free"] == 10 and doc["types"]["a100"]["stranded"] == 2


def test_picture_from_records():
    p = run("--records", str(DATA))
    assert p.returncode == 0 and "h100n1  ALLOCATED  h100 [AAAA|A...]" in p.stdout


def test_usage_and_slurm_failures_are_one_line():
    p = run("--records", "/nonexistent-dir")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "nodes.txt" in p.stderr
    p = run("--watch", "0.1")
    assert p.returncode == 2
    p = run(env_extra={"SLURM_CONF": "/nonexistent/slurm.conf"})
    assert p.returncode == 1 and "Traceback" not in p.stderr and p.stderr.count("\n") == 1


def test_watch_is_bounded_by_count():
    p = run("--watch", "0.5", "--count", "2", "--json", "--records", str(DATA))
    assert p.returncode == 0 and p.stdout.count('"schema"') == 2


def test_watch_loop_sleeps_between_refreshes_only():
    shown, slept = [], []
    n = watch_loop(lambda: f"frame {len(shown)}", 3.0, 3, shown.append, sleep=slept.append, clear=True)
    assert n == 3 and slept == [3.0, 3.0] and shown[0] == "\033[H\033[2Jframe 0"


def test_hostile_record_directories_are_one_line_exit_2(tmp_path):
    """Garbage, a FIFO (never opened blocking), a file over the cap (sparse: no disk used): exit 2, one
    line each, quickly; an optional file missing is fine."""
    import os

    from slurm_gpu.adapters.slurm.recorded import MAX_BYTES

    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "nodes.txt").write_bytes(b"\x00\xff not scontrol output\n" * 100)
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "nodes.txt")
    huge = tmp_path / "huge"
    huge.mkdir()
    with open(huge / "nodes.txt", "wb") as fh:
        fh.truncate(MAX_BYTES + 1)
    jobs_fifo = tmp_path / "jobs-fifo"
    jobs_fifo.mkdir()
    (jobs_fifo / "nodes.txt").write_bytes((DATA / "nodes.txt").read_bytes())
    os.mkfifo(jobs_fifo / "jobs.json")
    old_text = tmp_path / "old-text"  # scontrol's job text, which a job's name can forge, is not read
    old_text.mkdir()
    (old_text / "nodes.txt").write_bytes((DATA / "nodes.txt").read_bytes())
    (old_text / "jobs.txt").write_text("JobId=1 JobName=x\n")
    not_json = tmp_path / "not-json"
    not_json.mkdir()
    (not_json / "nodes.txt").write_bytes((DATA / "nodes.txt").read_bytes())
    (not_json / "jobs.json").write_text("JobId=1 JobName=x\n")
    for d, words in ((garbage, "no node record"), (fifo, "not a regular file"), (huge, "MiB"),
                     (jobs_fifo, "jobs.json: not a regular file"), (old_text, "squeue --json -t all > jobs.json"),
                     (not_json, "jobs.json: not squeue's JSON")):
        p = run("--json", "--records", str(d))
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and words in p.stderr, (d, p.stderr)
        assert "Traceback" not in p.stderr
    only_nodes = tmp_path / "only-nodes"
    only_nodes.mkdir()
    (only_nodes / "nodes.txt").write_bytes((DATA / "nodes.txt").read_bytes())
    assert run("--json", "--records", str(only_nodes)).returncode == 0
