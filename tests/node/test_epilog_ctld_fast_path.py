# SPDX-License-Identifier: Apache-2.0
"""The EpilogSlurmctld shim's fast path (slurm_gpu/node/install.py ``ctld_fast_path``): the installed shim
starts no Python for a job the hook would do nothing for, and hands every other job to the hook. The hook
here is a recorder (hooks.env ``SLURM_GPU_EPILOG_CTLD``), so each case says whether the shim ran it; the
rule is node/requeue.py ``decide``: a job is left without a word only when it was not killed by an early
stop signal, ran in no checkpoint_required partition, and has no ``<work dir>/.gpusub-ckpt``."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_gpu.node.install import ctld_fast_path, install
from slurm_gpu.node.requeue import CKPT_SUBDIR, EARLY_STOP_SIGNALS

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="admin install writes root-owned files")
REPO = Path(__file__).resolve().parents[2]
POLICY = str(REPO / "examples" / "policies" / "university.yaml")  # class spot-ckpt: checkpoint_required in spot


@pytest.fixture(scope="module")
def lab():
    d = Path(tempfile.mkdtemp(prefix="slurm-gpu-ectld-fast-", dir="/tmp"))
    os.chmod(d, 0o755)
    rec = d / "recorder.sh"
    rec.write_text(f'#!/bin/sh\necho "$SLURM_JOB_ID" >> {d}/ran\n')
    rec.chmod(0o755)
    install(str(d / "etc"), POLICY, env={"SLURM_GPU_EPILOG_CTLD": str(rec)})
    work = d / "work"
    work.mkdir(mode=0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def ran(lab: Path, work: str, job: str = "5", prefix: str = "etc", **env: str) -> bool:
    """Run the installed shim for one ended job; whether it handed the job to the hook."""
    (lab / "ran").unlink(missing_ok=True)
    base = {"SLURM_JOB_ID": job, "SLURM_JOB_UID": "1001", "SLURM_JOB_RESTART_COUNT": "0",
            "SLURM_JOB_EXIT_CODE": "0", "SLURM_JOB_EXIT_CODE2": "0:0", "SLURM_JOB_PARTITION": "batch",
            "SLURM_JOB_WORK_DIR": work, "SLURM_SCRIPT_CONTEXT": "epilog_slurmctld"}
    r = subprocess.run(["/bin/sh", str(lab / prefix / "epilog_ctld.sh")], env={**base, **env}, capture_output=True,
                       text=True, timeout=30, check=False)
    assert r.returncode == 0 and r.stdout == "", (r.stdout, r.stderr)
    return (lab / "ran").exists() and (lab / "ran").read_text().split() == [job]


def test_a_job_with_nothing_to_do_starts_no_hook(lab):
    assert not ran(lab, str(lab / "work"))
    assert not ran(lab, str(lab / "work") + "/", SLURM_JOB_EXIT_CODE2="1:0")  # failed, exit 1
    assert not ran(lab, "/", SLURM_JOB_EXIT_CODE2="0:9")  # KILL and TERM are Slurm's own kills
    assert not ran(lab, str(lab / "work"), SLURM_JOB_EXIT_CODE2="0:15", SLURM_JOB_PARTITION="interactive")


def test_every_job_the_hook_may_act_on_goes_to_it(lab):
    work = str(lab / "work")
    for sig in EARLY_STOP_SIGNALS:  # preempted before its trap: requeued with or without a checkpoint
        assert ran(lab, work, SLURM_JOB_EXIT_CODE2=f"0:{sig}")
    assert ran(lab, work, SLURM_JOB_PARTITION="spot")  # checkpoint_required: the hook logs the missing dir
    install(str(lab / "verbose"), POLICY, env={"SLURM_GPU_EPILOG_CTLD": f"{lab}/recorder.sh --verbose"})
    assert ran(lab, work, prefix="verbose")  # the site asked the hook to log every job
    (lab / "work" / CKPT_SUBDIR).mkdir()
    try:
        assert ran(lab, work)  # a checkpointing job
    finally:
        (lab / "work" / CKPT_SUBDIR).rmdir()
    os.symlink("/nonexistent", lab / "work" / CKPT_SUBDIR)  # a dangling link: the hook says it is untrusted
    try:
        assert ran(lab, work)
    finally:
        (lab / "work" / CKPT_SUBDIR).unlink()


def test_an_unreadable_or_indirect_work_dir_goes_to_the_hook(lab):
    work = lab / "work"
    assert ran(lab, "work")  # relative
    assert ran(lab, "")  # none
    assert ran(lab, str(lab / "missing"))  # gone (the hook logs nothing either, but it decides)
    assert ran(lab, f"{work}/../work")  # a .. on the way
    os.symlink(work, lab / "link")
    try:
        assert ran(lab, str(lab / "link"))  # a symlink on the way: the hook's walk judges it
        assert ran(lab, str(lab / "link") + "/")
    finally:
        (lab / "link").unlink()


def test_no_fast_path_without_the_policys_partitions():
    assert ctld_fast_path(None)[0].startswith("# no fast path")
    assert ctld_fast_path(["spot", "a;rm -rf /"])[0].startswith("# no fast path")  # not a partition name
    text = "\n".join(ctld_fast_path(["spot", "long-ckpt"]))
    assert '*,long-ckpt,*|*,spot,*) _sg_fast=' in text


HOSTILE = st.lists(st.sampled_from(list("ab/.*?[]$`'\"\\ \n;&|(){}~-") + ["..", CKPT_SUBDIR, "$(id)", "/"]),
                   max_size=16).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tail=HOSTILE)
def test_hostile_work_dirs_are_skipped_only_where_that_is_safe(lab, tail):
    """Whatever the work dir's text, the shim exits 0, prints nothing, runs nothing but the hook, and skips
    the hook only for an absolute path that is a directory, through no symlink and no ``..``, holding no
    checkpoint directory."""
    work = str(lab / "work") + "/" + tail
    if ran(lab, work):
        return
    parts = [p for p in work.split("/") if p not in ("", ".")]
    assert work.startswith("/") and ".." not in parts and os.path.isdir(work)
    assert not any(os.path.islink("/" + "/".join(parts[:i + 1])) for i in range(len(parts)))
    assert not os.path.lexists(os.path.join(work, CKPT_SUBDIR))
