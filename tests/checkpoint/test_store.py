# SPDX-License-Identifier: Apache-2.0
"""The marker directory on disk (adapters/markers.py) and the job API (checkpoint.job): atomic writes,
hostile files ignored with a warning and never followed, multi-rank completion, pruning."""

from __future__ import annotations

import os
import pwd
import threading
from pathlib import Path

import pytest

from slurm_gpu.adapters import markers as store
from slurm_gpu.checkpoint import job
from slurm_gpu.checkpoint.markers import Marker, marker_name, to_json


def env_for(d: Path, **extra: str) -> dict[str, str]:
    return {"GPUSUB_CKPT_DIR": str(d), "SLURM_JOB_ID": "77", **extra}


def rank_env(d: Path, rank: int, world: int, **extra: str) -> dict[str, str]:
    return env_for(d, SLURM_STEP_ID="0", SLURM_PROCID=str(rank), SLURM_STEP_NUM_TASKS=str(world), **extra)


class Warnings(list[str]):
    def __call__(self, text: str) -> None:
        self.append(text)


def test_write_is_atomic_and_leaves_no_temp_file(tmp_path: Path) -> None:
    m = Marker(step=3, path="/ck/3", time=1.0)
    written = store.write_marker(str(tmp_path / "d"), m)
    assert written == str(tmp_path / "d" / "gpusub-marker.3.0.json")
    assert os.listdir(tmp_path / "d") == ["gpusub-marker.3.0.json"]
    assert Path(written).read_bytes() == to_json(m)
    assert store.read_markers(str(tmp_path / "d")).markers == (m,)


def test_a_failed_write_leaves_the_old_marker_and_no_temp_file(tmp_path: Path) -> None:
    store.write_marker(str(tmp_path), Marker(step=3, path="/ck/old", time=1.0))
    os.mkdir(tmp_path / marker_name(4, 0))  # rename onto a directory fails
    with pytest.raises(OSError):
        store.write_marker(str(tmp_path), Marker(step=4, path="/ck/new", time=2.0))
    assert sorted(os.listdir(tmp_path)) == [marker_name(3, 0), marker_name(4, 0)]


def test_missing_directory_is_empty(tmp_path: Path) -> None:
    w = Warnings()
    assert store.read_markers(str(tmp_path / "none"), warn=w) == store.Listing() and w == []


def hostile_dir(tmp_path: Path) -> tuple[Path, Path]:
    d = tmp_path / "ck"
    store.write_marker(str(d), Marker(step=1, path="/ck/1", time=1.0))
    outside = tmp_path / "outside.json"
    outside.write_bytes(to_json(Marker(step=9, path="/evil", time=9.0)))
    return d, outside


def test_a_symlinked_marker_is_never_followed(tmp_path: Path) -> None:
    d, outside = hostile_dir(tmp_path)
    os.symlink(outside, d / marker_name(9, 0))
    w = Warnings()
    listing = store.read_markers(str(d), warn=w)
    assert [x.step for x in listing.markers] == [1]
    assert len(w) == 1 and "gpusub-marker.9.0.json ignored: a symlink (never followed)" in w[0]
    assert listing.owned == (("gpusub-marker.1.0.json", 1),)  # never pruned through the link either


def test_a_symlinked_directory_is_refused(tmp_path: Path) -> None:
    d, _ = hostile_dir(tmp_path)
    os.symlink(d, tmp_path / "link")
    w = Warnings()
    assert store.read_markers(str(tmp_path / "link"), warn=w).markers == ()
    assert "is a symlink" in w[0]
    with pytest.raises(OSError, match="symlink"):
        store.write_marker(str(tmp_path / "link"), Marker(step=2, path="/x"))


def test_corrupt_oversized_linked_and_special_files_are_ignored(tmp_path: Path) -> None:
    d, outside = hostile_dir(tmp_path)
    (d / marker_name(2, 0)).write_text("{not json")
    (d / marker_name(3, 0)).write_bytes(b" " * (65 * 1024))
    os.link(outside, d / marker_name(9, 0))
    os.mkfifo(d / marker_name(4, 0))  # opening must not block
    os.mkdir(d / marker_name(5, 0))
    (d / marker_name(6, 0)).write_bytes(to_json(Marker(step=7, path="/renamed")))  # a copy under another name
    (d / "notes.txt").write_text("not a marker name: not read")
    w = Warnings()
    done = threading.Event()
    result: list[store.Listing] = []
    t = threading.Thread(target=lambda: (result.append(store.read_markers(str(d), warn=w)), done.set()), daemon=True)
    t.start()
    assert done.wait(10), "reading the directory hung (a FIFO?)"
    assert [x.step for x in result[0].markers] == [1]
    text = "\n".join(sorted(w))
    for name, why in [(2, "not JSON"), (3, "larger than 65536 bytes"), (9, "has 2 hard links"),
                      (4, "not a regular file"), (5, "not a regular file"), (6, "the file name says")]:
        assert f"{marker_name(name, 0)} ignored: {why}" in text, (name, text)
    assert len(w) == 6
    # the corrupt files the user owns may be pruned; the FIFO, the directory and the hard link not
    assert sorted(result[0].owned) == [(marker_name(1, 0), 1), (marker_name(2, 0), 2), (marker_name(3, 0), 3),
                                       (marker_name(6, 0), 6)]


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_foreign_marker_is_ignored_and_root_reads_as_the_jobs_user(tmp_path: Path) -> None:
    nobody = pwd.getpwnam("nobody").pw_uid
    d, _ = hostile_dir(tmp_path)
    foreign = d / marker_name(9, 0)
    foreign.write_bytes(to_json(Marker(step=9, path="/evil", time=9.0)))
    os.chown(foreign, nobody, -1)
    w = Warnings()
    assert [x.step for x in store.read_markers(str(d), warn=w).markers] == [1]
    assert f"owned by uid {nobody}, not 0" in w[0]
    # a controller hook (root) reads the markers as the job's user: only that user's files count
    w2 = Warnings()
    assert store.read_markers(str(d), expected_uid=nobody, warn=w2).markers == ()
    assert "owned by uid 0" in " ".join(w2)  # the directory (root's) is not the job user's
    os.chown(d, nobody, -1)
    w3 = Warnings()
    assert [x.step for x in store.read_markers(str(d), expected_uid=nobody, warn=w3).markers] == [9]
    assert f"{marker_name(1, 0)} ignored: owned by uid 0, not {nobody}" in w3[0]


def test_four_ranks_complete_a_step_only_together(tmp_path: Path) -> None:
    d = tmp_path / "ck"
    for r in range(4):
        _, newest = job.mark_step(f"/ck/10/shard{r}", 10, env=rank_env(d, r, 4), warn=Warnings())
        assert (newest is not None) == (r == 3), r
    for r in (0, 1, 3):  # rank 2 never marks step 20
        _, newest = job.mark_step(f"/ck/20/shard{r}", 20, env=rank_env(d, r, 4), warn=Warnings())
        assert newest is not None and newest.step == 10
    newest = job.newest_step(env_for(d))
    assert newest is not None and newest.path == "/ck/10/shard0" and newest.path_of(2) == "/ck/10/shard2"


def test_marks_prune_to_the_last_k_complete_steps(tmp_path: Path) -> None:
    d = tmp_path / "ck"
    e = [rank_env(d, r, 2, GPUSUB_CKPT_KEEP="2") for r in range(2)]
    job.mark_step("/ck/1", 1, env=e[0])
    for step in (1, 2, 3, 4):
        job.mark_step(f"/ck/{step}", step, env=e[1])
        if step < 4:
            job.mark_step(f"/ck/{step + 1}", step + 1, env=e[0])
    # complete: 1..4; kept: 3, 4 (and nothing newer is pending)
    assert sorted(os.listdir(d)) == [marker_name(s, r) for s in (3, 4) for r in (0, 1)]


def test_default_step_and_relative_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    d = tmp_path / "ck"
    first, _ = job.mark_step("ckpt/a", env=env_for(d))
    second, newest = job.mark_step("ckpt/b", env=env_for(d, GPUSUB_RESTART_COUNT="2"))
    assert (first.step, second.step) == (0, 1)
    assert first.path == str(tmp_path / "ckpt" / "a")  # relative to the payload's directory, stored absolute
    assert newest is not None and newest.step == 1 and newest.markers[0].restart_count == 2
    assert (first.job_id, first.world_size, first.host) == ("77", 1, os.uname().nodename)


@pytest.mark.parametrize("env,path,why", [
    ({}, "/x", "GPUSUB_CKPT_DIR is not set"),
    ({"RANK": "4", "WORLD_SIZE": "4"}, "/x", "RANK=4 is not below WORLD_SIZE=4"),
    ({}, "/a\nb", "control character"),
    ({}, "", "path must be non-empty"),
])
def test_mark_refuses_with_one_line(tmp_path: Path, env: dict[str, str], path: str, why: str) -> None:
    full = {} if why.startswith("GPUSUB_CKPT_DIR") else {**env_for(tmp_path), **env}
    with pytest.raises(job.CheckpointError, match=why):
        job.mark_step(path, 1, env=full)
    assert not any(n.startswith("gpusub-marker") for n in os.listdir(tmp_path))


def test_a_bad_keep_warns_and_keeps_the_default(tmp_path: Path) -> None:
    w = Warnings()
    job.mark_step("/x", 1, env=env_for(tmp_path, GPUSUB_CKPT_KEEP="zero"), warn=w)
    assert w == ["GPUSUB_CKPT_KEEP='zero' is not a whole number 1..1000; keeping 3"]


def test_resume_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "WORLD_SIZE", "SLURM_STEP_ID", "GPUSUB_CKPT_DIR", "GPUSUB_RESUME_FROM"):
        monkeypatch.delenv(name, raising=False)
    assert job.resume_path() is None
    monkeypatch.setenv("GPUSUB_RESUME_FROM", "/from/the/script")
    assert job.resume_path() == "/from/the/script"  # without a directory: the script's value
    d = tmp_path / "ck"
    monkeypatch.setenv("GPUSUB_CKPT_DIR", str(d))
    assert job.resume_path() is None  # the markers are the truth: none yet
    for r in range(2):
        job.mark_step(f"/ck/5/{r}", 5, env=rank_env(d, r, 2))
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert job.resume_path() == "/ck/5/1"  # this rank's own shard
    monkeypatch.setenv("WORLD_SIZE", "1")  # a bad identity: rank 0's path, with a warning
    assert job.resume_path() == "/ck/5/0"


def test_a_killed_writer_s_old_temp_file_is_cleaned_up(tmp_path: Path) -> None:
    d = tmp_path / "ck"
    d.mkdir()
    old = d / ".gpusub-marker.4.0.json.1234.0badc0de.tmp"  # SIGKILL between create and rename
    fresh = d / ".gpusub-marker.5.0.json.1235.0badc0df.tmp"  # maybe a writer at work right now
    other = d / ".notes.tmp"
    for f in (old, fresh, other):
        f.write_text("{")
    an_hour_ago = os.stat(old).st_mtime - 3700
    os.utime(old, (an_hour_ago, an_hour_ago))
    os.utime(other, (an_hour_ago, an_hour_ago))
    w = Warnings()
    assert store.read_markers(str(d), warn=w).stale == (old.name,) and w == []
    job.mark_step("/ck/6", 6, env=env_for(d))
    assert sorted(os.listdir(d)) == [fresh.name, other.name, marker_name(6, 0)]
