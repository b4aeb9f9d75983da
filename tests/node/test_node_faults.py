# SPDX-License-Identifier: Apache-2.0
"""The node hooks' fault matrix: each case runs the real hooks. None is a GPU health failure, so each
exits 0 and drains nothing (except where a real failure meets a broken ``scontrol``: then the Epilog
exits 1 so that Slurm drains the node itself)."""

from __future__ import annotations

import importlib.util
import os
import resource
import signal
import sys
import time
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("node_hooks_common", Path(__file__).with_name("test_node_hooks.py"))
common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(common)
hooks, lib_dir, ok, JOB = common.hooks, common.lib_dir, common.ok, common.JOB
pytestmark = common.pytestmark


def no_drain(h) -> None:
    assert h.drains() == []


def test_nvml_missing(hooks, tmp_path):
    empty = tmp_path / "nolib"
    empty.mkdir()
    err = ok(hooks.run("prolog", LD_LIBRARY_PATH=str(empty)))
    assert "NVML not usable (NVML: NVML Shared Library Not Found)" in err
    assert sorted(os.listdir(hooks.root / "jobmap")) == ["2", "3"]  # Slurm's ids need no NVML
    ok(hooks.run("epilog", LD_LIBRARY_PATH=str(empty)))
    assert os.listdir(hooks.root / "jobmap") == []
    no_drain(hooks)


@pytest.mark.parametrize("how", ["state", "env"])
def test_driver_not_loaded(hooks, how):
    if how == "state":
        hooks.node(fail=("driver_not_loaded",))
        extra = {}
    else:
        extra = {"SLURM_GPU_NVML_STANDIN_FAIL": "driver_not_loaded"}
    for phase in ("prolog", "epilog"):
        assert "Driver Not Loaded" in ok(hooks.run(phase, **extra))
    no_drain(hooks)


def test_no_nvidia_driver_at_all(hooks):
    """These machines: no library, no state served."""
    for phase in ("prolog", "epilog"):
        ok(hooks.run(phase, SLURM_GPU_NVML_STANDIN="", LD_LIBRARY_PATH=""))
    no_drain(hooks)


def test_permission_denied(hooks):
    hooks.node(fail=("no_permission",))
    err = ok(hooks.run("prolog"))
    assert "Insufficient Permissions" in err
    assert [g["accounting"] for g in hooks.gpu_state()] == ["0"] * 8
    ok(hooks.run("epilog"))
    no_drain(hooks)


@pytest.mark.parametrize("symbol", ["nvmlDeviceGetCount_v2", "nvmlInitWithFlags", "nvmlDeviceGetRemappedRows"])
def test_hung_nvml_call_is_bounded(hooks, symbol):
    hooks.node(hang=symbol)
    t0 = time.monotonic()
    err = ok(hooks.run("epilog", timeout=30, SLURM_GPU_HOOKS_NVML_TIMEOUT_S="2"))
    assert time.monotonic() - t0 < 15
    assert "did not answer within 2 s" in err and "nothing drained" in err
    no_drain(hooks)


def test_hung_tool_is_bounded_and_killed(tmp_path):
    """A hung ``nvidia-smi`` (a stand-in script that sleeps): the tool runner gives up and kills it."""
    from slurm_gpu.adapters.gpu_node import run_tool
    from slurm_gpu.node.model import Unavailable

    smi = tmp_path / "nvidia-smi"
    pidfile = tmp_path / "pid"
    smi.write_text(f"#!/bin/sh\necho $$ > {pidfile}\nexec sleep 600\n")
    smi.chmod(0o755)
    t0 = time.monotonic()
    with pytest.raises(Unavailable, match="did not finish within 1 s; killed"):
        run_tool([str(smi), "-q"], 1)
    assert time.monotonic() - t0 < 5
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert run_tool(["sh", "-c", "echo hi; exit 3"], 5) == (3, "hi\n", "")
    with pytest.raises(Unavailable, match="No such file"):
        run_tool([str(tmp_path / "absent")], 5)


def test_corrupt_nvml_state(hooks):
    hooks.state_file.write_text("format=1\ngpus=8\nbogus\n")
    for phase in ("prolog", "epilog"):
        assert "Unknown Error" in ok(hooks.run(phase))
    no_drain(hooks)


@pytest.mark.parametrize("content", [b"", b'{"format": 1, "job": 4242, "gp', b"\xff\xfe garbage", b"[1, 2]",
                                     b'{"format": 1, "job": 1, "gpus": []}'])
def test_corrupt_or_half_written_job_state(hooks, content):
    ok(hooks.run("prolog"))
    (hooks.root / "state" / f"{JOB}.json").write_bytes(content)
    err = ok(hooks.run("epilog"))
    assert "ignored" in err
    assert os.listdir(hooks.root / "jobmap") == []  # the rest of the epilog still ran
    assert not (hooks.root / "state" / f"{JOB}.json").exists()
    assert hooks.acct_lines() == []  # no stats without the prolog's record
    no_drain(hooks)


def _fsize_limit(limit: int):
    def pre() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return pre


def test_full_disk_for_the_stats_file(hooks):
    ok(hooks.run("prolog"))
    acct = hooks.root / "acct" / "gpu-jobs.jsonl"
    acct.parent.mkdir()
    acct.write_text("x" * 64 + "\n")
    err = ok(hooks.run("epilog", preexec=_fsize_limit(65)))  # every write beyond 65 bytes: EFBIG
    assert "stats not written to" in err and "too large" in err
    assert "textfile not written" in err
    assert acct.read_text() == "x" * 64 + "\n"
    no_drain(hooks)


def test_stats_file_on_dev_full(hooks):
    ok(hooks.run("prolog"))
    err = ok(hooks.run("epilog", SLURM_GPU_HOOKS_ACCOUNTING_FILE="/dev/full"))
    assert "stats not written to /dev/full" in err
    no_drain(hooks)


def test_healthy_job_never_calls_scontrol(hooks, tmp_path):
    broken = tmp_path / "scontrol-broken"
    broken.write_text(f"#!/bin/sh\ntouch {tmp_path}/called\nexit 1\n")
    broken.chmod(0o755)
    ok(hooks.run("prolog", SLURM_GPU_HOOKS_SCONTROL=str(broken)))
    ok(hooks.run("epilog", SLURM_GPU_HOOKS_SCONTROL=str(broken)))
    assert not (tmp_path / "called").exists()


@pytest.mark.parametrize("script", ["echo 'slurm_update error: Unable to contact slurm controller' >&2; exit 1",
                                    "exec sleep 600"])
def test_scontrol_unreachable_during_a_real_failure(hooks, tmp_path, script):
    bad = tmp_path / "scontrol-bad"
    bad.write_text(f"#!/bin/sh\n{script}\n")
    bad.chmod(0o755)
    ok(hooks.run("prolog"))
    hooks.set_gpu(2, "ecc_volatile_uncorrected", "1")
    t0 = time.monotonic()
    err = ok(hooks.run("epilog", SLURM_GPU_HOOKS_SCONTROL=str(bad), SLURM_GPU_HOOKS_DRAIN_TIMEOUT_S="1"), rc=3)
    assert time.monotonic() - t0 < 20
    assert "drain of h100n1 failed" in err
    assert ("Unable to contact" in err) if "exit 1" in script else ("did not finish within 1 s" in err)


def test_scontrol_missing(hooks, tmp_path):
    hooks.set_gpu(3, "lost", "1")
    err = ok(hooks.run("epilog", SLURM_GPU_HOOKS_SCONTROL=str(tmp_path / "nope")), rc=3)
    assert "drain of h100n1 failed" in err and "No such file" in err


def test_bad_config_lines_are_reported_and_defaults_kept(hooks):
    with hooks.conf.open("a") as f:
        f.write("kill_grace_s = soon\nno equals sign\nfrobnicate = 1\ngpu_ids = serial\n")
    err = ok(hooks.run("prolog"))
    conf = str(hooks.conf)
    assert f"{conf}:12: kill_grace_s: expected a whole number, got 'soon'" in err
    assert f"{conf}:13: expected key = value" in err and f"{conf}:14: unknown key 'frobnicate'" in err
    assert f"{conf}:15: gpu_ids: expected one of index, minor, got 'serial'" in err
    assert sorted(os.listdir(hooks.root / "jobmap")) == ["2", "3"]


def test_odd_gpu_ids_and_no_job(hooks):
    err = ok(hooks.run("prolog", SLURM_JOB_GPUS="2,junk;rm,3"))
    assert "GPU id 'junk;rm' not understood; skipped" in err
    assert sorted(os.listdir(hooks.root / "jobmap")) == ["2", "3"]
    err = ok(hooks.run("epilog", SLURM_JOB_ID="x"))
    assert "no job in the environment" in err
    assert ok(hooks.run("task-prolog", SLURM_JOB_ID="")) == ""


def test_cli_help_and_stray_arguments():
    import subprocess

    r = subprocess.run([str(common.BIN / "slurm-gpu-epilog"), "--help"], capture_output=True, text=True,
                       timeout=30, check=False)
    assert r.returncode == 0 and r.stdout.startswith("usage: slurm-gpu-epilog")
    assert sys.executable  # the entry points live next to this interpreter


SHIMS = Path(__file__).resolve().parents[2] / "prolog_epilog"


@pytest.mark.parametrize(("shim", "var"), [("prolog.sh", "SLURM_GPU_PROLOG"), ("epilog.sh", "SLURM_GPU_EPILOG"),
                                           ("task_prolog.sh", "SLURM_GPU_TASK_PROLOG")])
def test_shims_pass_on_only_a_real_failure(tmp_path, shim, var):
    import subprocess

    def run(body: str | None) -> subprocess.CompletedProcess:
        entry = tmp_path / "entry"
        if body is not None:
            entry.write_text(f"#!/bin/sh\n{body}\n")
            entry.chmod(0o755)
        env = {var: str(entry), "SLURM_JOB_ID": "9"}  # no PATH, as slurmd runs it
        return subprocess.run(["/bin/sh", str(SHIMS / shim)], env=env, capture_output=True, text=True, timeout=30,
                              check=False)

    assert run("echo export A=1; exit 0").returncode == 0
    assert run("echo export A=1; exit 0").stdout == "export A=1\n"
    assert run("exit 3").returncode == 1  # a real health failure / a failed set-up
    assert run("echo 'Traceback ... ModuleNotFoundError' >&2; exit 1").returncode == 0  # our own fault
    assert run("kill -9 $$").returncode == 0
    (tmp_path / "entry").unlink()
    r = run(None)
    assert r.returncode == 0 and "not found" in r.stderr
