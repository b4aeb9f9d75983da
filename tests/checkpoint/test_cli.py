# SPDX-License-Identifier: Apache-2.0
"""``gpusub-ckpt`` (mark, resume, status): exit codes, one-line errors, no click at start-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLEAN = {k: v for k, v in os.environ.items()
         if not k.startswith(("GPUSUB_", "SLURM_")) and k not in ("RANK", "WORLD_SIZE")}


def ckpt(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "slurm_gpu.cli.ckpt_mark", *args], capture_output=True, text=True,
                          timeout=60, env={**CLEAN, "PYTHONPATH": str(ROOT), **env})


def test_mark_resume_status(tmp_path: Path) -> None:
    d = str(tmp_path / "ck")
    assert ckpt("resume", "--dir", d).returncode == 1  # nothing yet: exit 1, nothing printed
    r = ckpt("mark", "/ck/a", "--step", "4", "--cost", "2.5", GPUSUB_CKPT_DIR=d, SLURM_JOB_ID="9")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "gpusub-ckpt: marked step 4 (rank 0 of 1): complete\n")
    for rank in (0, 1):  # a two-rank step
        r = ckpt("mark", f"/ck/b{rank}", "--step=5", "-q", GPUSUB_CKPT_DIR=d, RANK=str(rank), WORLD_SIZE="2")
        assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    r = ckpt("resume", GPUSUB_CKPT_DIR=d)
    assert (r.returncode, r.stdout) == (0, "/ck/b0\n")
    assert ckpt("resume", "--rank", "1", GPUSUB_CKPT_DIR=d).stdout == "/ck/b1\n"
    status = json.loads(ckpt("status", "--dir", d).stdout)
    assert [(s["step"], s["world_size"], s["path"]) for s in status["complete"]] == [(5, 2, "/ck/b0"), (4, 1, "/ck/a")]
    assert status["complete"][1]["cost_s"] == 2.5 and status["markers"] == 3


def test_waiting_for_the_other_ranks(tmp_path: Path) -> None:
    r = ckpt("mark", "/ck/x", "--step", "1", GPUSUB_CKPT_DIR=str(tmp_path), SLURM_STEP_ID="0", SLURM_PROCID="1",
             SLURM_STEP_NUM_TASKS="3")
    assert r.stderr == "gpusub-ckpt: marked step 1 (rank 1 of 3): waiting for the other ranks\n"


@pytest.mark.parametrize("args,env,code,message", [
    ((), {}, 2, "a command is needed"),
    (("frob",), {}, 2, "unknown command 'frob'"),
    (("mark",), {}, 2, "mark takes one PATH, not 0"),
    (("mark", "a", "b"), {}, 2, "mark takes one PATH, not 2"),
    (("mark", "/x", "--step"), {}, 2, "--step needs a value"),
    (("mark", "/x", "--step", "-3"), {}, 2, "--step '-3': expected a whole number"),
    (("mark", "/x", "--cost", "nan"), {}, 2, "--cost 'nan': expected seconds"),
    (("mark", "/x", "--bogus"), {}, 2, "unknown option '--bogus' for mark"),
    (("mark", "/x"), {}, 1, "GPUSUB_CKPT_DIR is not set"),
    (("mark", "/x"), {"GPUSUB_CKPT_DIR": "/proc/no/such"}, 1, "cannot write the marker in /proc/no/such"),
    (("resume",), {}, 2, "no checkpoint directory"),
    (("status", "extra"), {}, 2, "status takes no arguments"),
])
def test_errors_are_one_line_with_the_documented_code(args: tuple[str, ...], env: dict[str, str], code: int,
                                                      message: str) -> None:
    r = ckpt(*args, **env)
    assert r.returncode == code, r.stderr
    first = r.stderr.splitlines()[0]
    assert first.startswith("gpusub-ckpt: error: ") and message in first, r.stderr
    assert "Traceback" not in r.stderr


def test_help() -> None:
    r = ckpt("--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: gpusub-ckpt mark PATH")


def test_start_up_imports_no_click(tmp_path: Path) -> None:
    code = ("import sys; from slurm_gpu.cli import ckpt_mark; ckpt_mark.run(['mark', '/x', '-q']); "
            "print(sorted(m for m in ('click', 'jinja2', 'yaml', 'logging', 'slurm_gpu.policy') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**CLEAN, "PYTHONPATH": str(ROOT), "GPUSUB_CKPT_DIR": str(tmp_path)})
    assert (r.returncode, r.stdout.strip()) == (0, "[]"), r.stderr


def test_the_console_script_is_declared() -> None:
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    scripts = dict(line.split(" = ") for line in cfg["options.entry_points"]["console_scripts"].strip().splitlines())
    module, _, attr = scripts["gpusub-ckpt"].partition(":")
    import importlib

    assert callable(getattr(importlib.import_module(module), attr))
