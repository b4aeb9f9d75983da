# SPDX-License-Identifier: Apache-2.0
"""The node hooks run as root: each attack here is tried against the real hooks. A symlink planted where
a per-job file goes is replaced or refused, never followed; nothing is written into a directory that a
user can write; only the job's GPUs change."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("node_hooks_common_sec", Path(__file__).with_name("test_node_hooks.py"))
common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(common)
hooks, lib_dir, ok, JOB = common.hooks, common.lib_dir, common.ok, common.JOB
pytestmark = common.pytestmark
USER = 1001


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    v = tmp_path / "victim"
    v.write_text("precious\n")
    return v


def test_symlink_at_the_state_file_is_not_followed(hooks, victim):
    sd = hooks.root / "state"
    sd.mkdir(mode=0o700)
    (sd / f"{JOB}.json").symlink_to(victim)
    ok(hooks.run("prolog"))
    assert victim.read_text() == "precious\n"
    assert not (sd / f"{JOB}.json").is_symlink()  # replaced by our own file
    (sd / f"{JOB}.json").unlink()
    (sd / f"{JOB}.json").symlink_to(victim)
    err = ok(hooks.run("epilog"))
    assert "is a symlink; refused" in err
    assert victim.read_text() == "precious\n" and not (sd / f"{JOB}.json").exists()


def test_symlink_at_a_jobmap_file_is_not_followed(hooks, victim):
    jm = hooks.root / "jobmap"
    jm.mkdir()
    (jm / "2").symlink_to(victim)
    ok(hooks.run("prolog"))
    assert victim.read_text() == "precious\n" and (jm / "2").read_text() == f"{JOB}\n"
    os.unlink(jm / "3")
    (jm / "3").symlink_to(victim)
    ok(hooks.run("epilog"))
    assert victim.read_text() == "precious\n" and os.listdir(jm) == []


def test_symlinked_directory_is_refused(hooks, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (hooks.root / "state").symlink_to(elsewhere)
    os.lchown(hooks.root / "state", USER, USER)  # a user's link (root's own, in root's directory, is followed)
    err = ok(hooks.run("prolog"))
    assert "is a symlink that root does not control; refused" in err and os.listdir(elsewhere) == []


def test_roots_own_symlinked_directory_is_followed(hooks, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (hooks.root / "state").symlink_to(elsewhere)  # as /var/run -> /run: only root could have made it
    ok(hooks.run("prolog"))
    assert os.listdir(elsewhere) == [f"{JOB}.json"]


@pytest.mark.parametrize("how", ["owned-by-user", "world-writable", "group-writable"])
@pytest.mark.parametrize("state_ok", [True, False])
def test_nothing_written_in_a_user_writable_directory(hooks, how, state_ok):
    r = hooks.root
    bad = ("jobmap", "acct", "textfile", "task") + (() if state_ok else ("state",))
    for d in bad:
        (r / d).mkdir()
        if how == "owned-by-user":
            os.chown(r / d, USER, USER)
        else:
            os.chmod(r / d, 0o777 if how == "world-writable" else 0o775)
    err = ok(hooks.run("prolog"))
    err += ok(hooks.run("epilog"))
    why = "owned by uid 1001, not root" if how == "owned-by-user" else "is writable by other users; refused"
    assert why in err
    if state_ok:  # the epilog had the prolog's record and tried the stats files
        assert "stats not written to" in err and "textfile not written" in err
    else:
        assert "per-job state not kept" in err
    for d in bad:
        assert os.listdir(r / d) == [], d
    assert hooks.drains() == []


def test_nothing_created_under_a_user_writable_parent(hooks):
    shared = hooks.root / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # like /tmp: sticky, world-writable
    ok(hooks.run("prolog", SLURM_GPU_HOOKS_STATE_DIR=str(shared / "state"),
                 SLURM_GPU_HOOKS_JOBMAP_DIR=str(shared / "map")))
    assert os.listdir(shared) == []


def test_user_owned_stats_file_is_not_appended(hooks):
    ok(hooks.run("prolog"))
    (hooks.root / "acct").mkdir()
    acct = hooks.root / "acct" / "gpu-jobs.jsonl"
    acct.write_text("")
    os.chown(acct, USER, USER)
    err = ok(hooks.run("epilog"))
    assert "owned by uid 1001, not root" in err and acct.read_text() == ""


def test_only_the_jobs_gpus_change(hooks):
    before = hooks.gpu_state()
    ok(hooks.run("prolog"))
    ok(hooks.run("epilog"))
    after = hooks.gpu_state()
    for i in (0, 1, 4, 5, 6, 7):
        assert after[i] == before[i], i
    assert [after[i]["accounting"] for i in (2, 3)] == ["1", "1"]


def test_task_prolog_as_the_user_prints_only_safe_lines(hooks):
    td = hooks.root / "task"
    td.mkdir()
    (td / str(JOB)).write_text("export OK_VAR=1\nrm -rf /\nexport 1BAD=x\nunset GPU_DEVICE_ORDINAL\nprint hello\n")
    r = hooks.run("task-prolog")
    assert ok(r) == "" and r.stdout == "export OK_VAR=1\nunset GPU_DEVICE_ORDINAL\nprint hello\n"
    (td / str(JOB)).unlink()
    (td / str(JOB)).symlink_to("/etc/passwd")
    r = hooks.run("task-prolog")
    assert ok(r) == "" and r.stdout == ""
