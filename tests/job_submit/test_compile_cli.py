# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu policy compile``: the script it prints or installs, atomically and idempotently, and its
exit codes (0 written or printed, 1 invalid policy or unwritable file, 2 usage)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurm_gpu.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
POLICY = str(ROOT / "examples" / "policies" / "university.yaml")


def _run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, ["policy", "compile", *args], env=env)


def test_prints_one_lua_script() -> None:
    r = _run(POLICY)
    assert r.exit_code == 0, r.output
    assert r.output.startswith("-- SPDX-License-Identifier: Apache-2.0")
    assert "function slurm_job_submit(" in r.output and "function slurm_job_modify(" in r.output
    for step in ("check_request", "fit_vram", "match_class", "place", "resolve_gpus", "set_time", "apply_defaults"):
        assert f"local function {step}(" in r.output  # one Lua function per classifier step, same name


def test_output_file_is_written_once_then_left_alone(tmp_path: Path) -> None:
    dst = tmp_path / "job_submit.lua"
    r = _run(POLICY, "-o", str(tmp_path))  # a directory gets job_submit.lua
    assert r.exit_code == 0 and "written" in r.output
    assert oct(dst.stat().st_mode & 0o777) == "0o644"
    first = dst.stat().st_mtime_ns
    r = _run(POLICY, "-o", str(dst))
    assert r.exit_code == 0 and "unchanged" in r.output and dst.stat().st_mtime_ns == first
    assert not [p for p in os.listdir(tmp_path) if p != "job_submit.lua"]  # no temporary file left


def test_install_goes_beside_slurm_conf_and_replaces_a_symlink(tmp_path: Path) -> None:
    conf_dir = tmp_path / "etc"
    conf_dir.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (conf_dir / "job_submit.lua").symlink_to(victim)
    r = _run(POLICY, "--install", env={"SLURM_CONF": str(conf_dir / "slurm.conf")})
    assert r.exit_code == 0, r.output
    assert not (conf_dir / "job_submit.lua").is_symlink()
    assert victim.read_text() == "keep me"  # the link was replaced, never followed
    assert "slurm_job_submit" in (conf_dir / "job_submit.lua").read_text()


def test_bad_policy_names_file_line_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nname: x\npartitions:\n  - name: p\n    node_types: [a]\n    default: maybe\n")
    r = _run(str(bad))
    assert r.exit_code == 1
    assert f"{bad}:6:" in r.output and "default" in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("args", [["-o", "x.lua", "--install"], ["/nonexistent/policy.yaml"]])
def test_usage_errors(args: list[str]) -> None:
    r = _run(*([POLICY] if args[0] == "-o" else []), *args)
    assert r.exit_code == 2, r.output


def test_unwritable_destination_is_one_line(tmp_path: Path) -> None:
    r = _run(POLICY, "-o", str(tmp_path / "missing" / "job_submit.lua"))
    assert r.exit_code == 1 and r.output.count("\n") == 1 and "cannot write" in r.output
