# SPDX-License-Identifier: Apache-2.0
"""`slurm-gpu policy check|show`: exit codes 0/1/2, stdout and stderr checked separately."""

from __future__ import annotations

import json
import os

from click.testing import CliRunner

from slurm_gpu.cli.main import cli

EX = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "policies")
BAD = os.path.join(os.path.dirname(__file__), "bad")


def run(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, list(args), env={"SLURM_CONF": "/no/such/slurm.conf", **(env or {})})


def test_check_valid() -> None:
    r = run("policy", "check", os.path.join(EX, "university.yaml"))
    assert r.exit_code == 0, r.output
    assert r.stdout.strip().endswith("university.yaml: valid")
    assert r.stderr == ""


def test_check_invalid_names_line_and_field() -> None:
    path = os.path.join(BAD, "unknown_key_max_tme.yaml")
    r = run("policy", "check", path)
    assert r.exit_code == 1
    assert f"error: {path}:14:5: partitions.batch.max_tme: found unknown key 'max_tme'" in r.stderr
    assert "did you mean 'max_time'?" in r.stderr
    assert "invalid (1 error)" in r.stdout


def test_check_json() -> None:
    r = run("policy", "check", "--json", os.path.join(BAD, "many_problems.yaml"))
    assert r.exit_code == 1
    data = json.loads(r.stdout)
    assert data["valid"] is False and len(data["errors"]) == 4


def test_check_usage_errors() -> None:
    assert run("policy", "check", "/no/such/policy.yaml").exit_code == 2
    assert run("policy", "check").exit_code == 2
    assert run("policy", "check", "--bogus", os.path.join(EX, "university.yaml")).exit_code == 2


def test_check_warns_about_missing_topology(tmp_path) -> None:
    p = tmp_path / "p.yaml"
    p.write_text("version: 1\ngpu_types: [{name: h100, memory_gb: 80}]\n"
                 "node_types: [{name: n8, topology: nowhere.yaml, gpu_type: h100, gpus: 8, nodes: n1}]\n"
                 "partitions: [{name: b, node_types: [n8]}]\nclasses: [{name: c, partition: b}]\n")
    r = run("policy", "check", str(p))
    assert r.exit_code == 0
    assert f"warning: node_types.n8.topology: file {tmp_path}/nowhere.yaml not found" in r.stderr


def test_show() -> None:
    r = run("policy", "show", os.path.join(EX, "smallgroup.yaml"))
    assert r.exit_code == 0
    assert "node type a100x4: node[1-2] 4 x a100" in r.stdout
    r = run("policy", "show", "--json", os.path.join(EX, "ailab.yaml"))
    data = json.loads(r.stdout)
    assert [p["name"] for p in data["partitions"]] == ["prod", "train", "dev", "spot"]
    assert run("policy", "show", os.path.join(BAD, "bad_bool.yaml")).exit_code == 1
