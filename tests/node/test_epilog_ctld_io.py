# SPDX-License-Identifier: Apache-2.0
"""The controller-side hook on disk: the job's checkpoint directory read as root for another user (hostile
directories are refused with a reason, never followed), the log file, and the command that always exits 0.

These tests run as root (the hook runs as root or SlurmUser) and make files of the lab user's uid."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slurm_gpu.adapters import fs
from slurm_gpu.checkpoint.markers import Marker, to_json
from slurm_gpu.node.epilog_ctld import PROG, read_ckpt
from slurm_gpu.node.requeue import MISSING, JobFacts, PolicyFacts, decide

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="reads another user's files as root, as the hook does")
UID = 1001  # the lab user's uid; only a number is needed here
OTHER = 1002
JOB = 42


def _chown(p: Path, uid: int) -> None:
    os.lchown(p, uid, uid)


def make_job_dir(root: Path, markers: int = 1, uid: int = UID) -> tuple[JobFacts, Path]:
    """<root>/w/.gpusub-ckpt/42 owned by ``uid`` with ``markers`` valid fresh markers; the job's facts."""
    work = root / "w"
    ck = work / ".gpusub-ckpt" / str(JOB)
    ck.mkdir(parents=True)
    for p in (work, work / ".gpusub-ckpt", ck):
        _chown(p, uid)
    now = time.time()
    for step in range(markers):
        m = Marker(step=step, path=f"/ck/{step}", time=now, job_id=str(JOB))
        f = ck / m.name
        f.write_bytes(to_json(m))
        _chown(f, uid)
    job = JobFacts(job_id=JOB, uid=UID, env_restarts=0, partition="spot", work_dir=str(work),
                   state="COMPLETING", reason="None", restarts=0, preempted=True, start_s=now - 60)
    return job, ck


def read(job: JobFacts) -> tuple[object, list[str]]:
    lines: list[str] = []
    return read_ckpt(job, lines.append), lines


POLICY = PolicyFacts(max_requeues=3, checkpoint_partitions=frozenset({"spot"}))


def test_good_directory_is_read_and_requeued(tmp_path: Path) -> None:
    job, _ = make_job_dir(tmp_path, markers=2)
    view, lines = read(job)
    assert view.exists and len(view.markers) == 2 and lines == []  # type: ignore[attr-defined]
    d = decide(job, POLICY, view)  # type: ignore[arg-type]
    assert d.action == "requeue" and d.step is not None and d.step.step == 1


def test_missing_directory(tmp_path: Path) -> None:
    job, ck = make_job_dir(tmp_path)
    for f in ck.iterdir():
        f.unlink()
    ck.rmdir()
    view, _ = read(job)
    assert not view.exists and view.problem == MISSING  # type: ignore[attr-defined]


def _hostile(tmp_path: Path, kind: str) -> JobFacts:
    job, ck = make_job_dir(tmp_path)
    work = tmp_path / "w"
    if kind == "symlinked job dir":  # .gpusub-ckpt/42 -> a directory of someone else's markers
        elsewhere = tmp_path / "elsewhere"
        ck.rename(elsewhere)
        ck.symlink_to(elsewhere)
        _chown(ck, UID)
    elif kind == "symlinked .gpusub-ckpt":
        (work / ".gpusub-ckpt").rename(tmp_path / "moved")
        (work / ".gpusub-ckpt").symlink_to(tmp_path / "moved")
        _chown(work / ".gpusub-ckpt", UID)
    elif kind == "user's symlink above":  # the work dir itself reached through the user's link
        link = tmp_path / "link"
        link.symlink_to(work)
        _chown(link, UID)
        job = dataclasses.replace(job, work_dir=str(link))
    elif kind == "foreign job dir":
        _chown(ck, OTHER)
    elif kind == "foreign .gpusub-ckpt":
        _chown(work / ".gpusub-ckpt", 0)
    elif kind == "dot-dot":
        job = dataclasses.replace(job, work_dir=f"{tmp_path}/w/../w")
    elif kind == "job dir is a file":
        for f in ck.iterdir():
            f.unlink()
        ck.rmdir()
        ck.write_text("x")
    return job


@pytest.mark.parametrize("kind, words", [
    ("symlinked job dir", "symlink"), ("symlinked .gpusub-ckpt", "symlink"), ("user's symlink above", "symlink"),
    ("foreign job dir", "owned by uid 1002"), ("foreign .gpusub-ckpt", "owned by uid 0"), ("dot-dot", "'..'"),
    ("job dir is a file", "not a directory"),
])
def test_hostile_directory_is_refused_with_a_reason(tmp_path: Path, kind: str, words: str) -> None:
    job = _hostile(tmp_path, kind)
    view, _ = read(job)
    assert not view.exists and words in view.problem  # type: ignore[attr-defined]
    d = decide(dataclasses.replace(job, partition="batch"), POLICY, view)  # type: ignore[arg-type]
    assert d.action == "leave" and words in d.reason


def test_root_controlled_symlink_is_followed(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o755)
    job, _ = make_job_dir(tmp_path)
    link = tmp_path / "rootlink"  # root's link in root's directory (as /home -> /mnt/home)
    link.symlink_to("w")
    view, _ = read(dataclasses.replace(job, work_dir=str(link)))
    assert view.exists and len(view.markers) == 1  # type: ignore[attr-defined]


def test_link_in_a_world_writable_directory_is_not_followed(tmp_path: Path) -> None:
    job, _ = make_job_dir(tmp_path)
    os.chmod(tmp_path, 0o777)
    (tmp_path / "rootlink").symlink_to("w")
    with pytest.raises(fs.Untrusted, match="not followed"):
        os.close(fs.open_dir(str(tmp_path / "rootlink"), trust=fs.LINKS))


@pytest.mark.parametrize("kind", ["fifo", "symlink", "foreign", "corrupt", "huge"])
def test_hostile_markers_are_skipped_with_a_log_line(tmp_path: Path, kind: str) -> None:
    job, ck = make_job_dir(tmp_path, markers=0)
    name = ck / "gpusub-marker.3.0.json"
    if kind == "fifo":
        os.mkfifo(name)
    elif kind == "symlink":
        good = tmp_path / "good.json"
        good.write_bytes(to_json(Marker(step=3, path="/x", time=time.time(), job_id=str(JOB))))
        _chown(good, UID)
        name.symlink_to(good)
    elif kind == "foreign":
        name.write_bytes(to_json(Marker(step=3, path="/x", time=time.time(), job_id=str(JOB))))
        _chown(name, OTHER)
    elif kind == "corrupt":
        name.write_bytes(b'{"schema": "gpusub-ckpt-marker", "version": 1, "step": NaN}')
    else:
        name.write_bytes(b" " * (1 << 20))
    if kind != "foreign":
        _chown(name, UID)
    start = time.monotonic()
    view, lines = read(job)
    assert time.monotonic() - start < 5  # a FIFO never blocks the reader
    assert view.exists and view.markers == ()  # type: ignore[attr-defined]
    assert len(lines) == 1 and "gpusub-marker.3.0.json ignored" in lines[0] and f"job {JOB}" in lines[0]
    assert decide(job, POLICY, view).action == "leave"  # type: ignore[arg-type]


def test_log_file_is_made_safely(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "epilog-ctld.log"
    log = fs.Log(PROG, str(path))
    log("hello")
    log.close()
    assert path.read_text().endswith("hello\n") and (path.stat().st_mode & 0o777) == 0o640
    target = tmp_path / "target"
    target.write_text("keep\n")
    link = tmp_path / "link.log"
    link.symlink_to(target)
    log = fs.Log(PROG, str(link))
    assert log.fd is None and "logging to stderr only" in log.problem
    log("x")
    log.close()
    assert target.read_text() == "keep\n"


def _cli(args: list[str], env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "slurm_gpu.cli.epilog_ctld", *args], env=env,
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)


@pytest.mark.parametrize("env, args", [
    ({}, []),
    ({"SLURM_JOB_ID": "abc", "SLURM_JOB_UID": "1001"}, []),
    ({"SLURM_JOB_ID": "9" * 5000, "SLURM_JOB_UID": "-1", "SLURM_JOB_WORK_DIR": "\x01\x02"}, []),
    ({"SLURM_JOB_ID": "1"}, ["--bogus", "--policy"]),
    ({}, ["--log", "/proc/nope/x.log"]),
    ({}, ["--help"]),
])
def test_cli_always_exits_0(tmp_path: Path, env: dict[str, str], args: list[str]) -> None:
    full = {"PYTHONPATH": str(Path(__file__).resolve().parents[2]), **env}
    if "--log" not in args:
        args = [*args, "--log", str(tmp_path / "e.log")]
    proc = _cli(args, full, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    if "--help" in args:
        assert proc.stdout.startswith("usage: slurm-gpu-epilog-ctld")
    else:
        assert proc.stderr.strip(), "says what it did"
    if "--log" in args and "/proc/nope/x.log" in args:
        assert "logging to stderr only" in proc.stderr


def test_shim_exits_0_without_the_entry_point(tmp_path: Path) -> None:
    shim = Path(__file__).resolve().parents[2] / "prolog_epilog" / "epilog_ctld.sh"
    proc = subprocess.run(["/bin/sh", str(shim)], env={"SLURM_GPU_EPILOG_CTLD": "/nonexistent/x", "SLURM_JOB_ID": "7"},
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and "not found" in proc.stderr and "job 7 left alone" in proc.stderr


def test_reading_leaves_the_working_directory_as_it_was(tmp_path: Path) -> None:
    job, _ = make_job_dir(tmp_path)
    before = os.getcwd()
    read(job)
    assert os.getcwd() == before
