# SPDX-License-Identifier: Apache-2.0
"""A policy class that matches by Unix group (``match.groups``) sees the user's real groups (the name
service, as gpusub runs); gpusub asks the name service for them only when some class matches by group."""

from __future__ import annotations

import grp
import os
from pathlib import Path

import pytest

from slurm_gpu.submit.gpusub import prepare

POLICY = Path(__file__).resolve().parents[2] / "examples" / "policies" / "university.yaml"
GROUP_CLASS = """  - name: by-group
    description: the user's own group gets the high QOS
    match: {{min_gpus: 1, groups: [{group}]}}
    partition: batch
    qos: high
"""


class NoNodes:
    """A backend without node records or sbatch (the policy's own nodes; the version comes from the env)."""


def policy_with_group(tmp_path: Path, group: str) -> str:
    text = POLICY.read_text(encoding="utf-8")
    head, sep, tail = text.partition("classes:\n")
    assert sep
    (tmp_path / "policies").mkdir(exist_ok=True)
    if not (tmp_path / "topology").exists():  # the policy names its topology files as ../topology/...
        (tmp_path / "topology").symlink_to(POLICY.parents[1] / "topology")
    path = tmp_path / "policies" / "policy.yaml"
    path.write_text(head + sep + GROUP_CLASS.format(group=group) + tail, encoding="utf-8")
    return str(path)


def job_class(tmp_path: Path, policy: str) -> str | None:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\ntrue\n")
    env = {"GPUSUB_POLICY": policy, "GPUSUB_SLURM_VERSION": "22.05.8", "GPUSUB_NODES": "policy",
           "XDG_CACHE_HOME": str(tmp_path), "HOME": str(tmp_path), "PATH": os.environ.get("PATH", "")}
    prep = prepare(["--gpus=h100:4", "-t", "2:00:00", str(script)], env, NoNodes())  # type: ignore[arg-type]
    assert prep.decision.accepted, prep.decision
    return prep.decision.job_class


def test_a_class_of_one_of_the_users_groups_is_chosen(tmp_path):
    try:
        mine = grp.getgrgid(os.getgid()).gr_name  # the primary group (getgroups() may not list it)
    except KeyError:
        pytest.skip("the user's group has no name in the name service")
    assert job_class(tmp_path, policy_with_group(tmp_path, mine)) == "by-group"


def test_a_class_of_another_group_is_not(tmp_path):
    mine = set()
    for gid in {os.getgid(), *os.getgroups()}:
        try:
            mine.add(grp.getgrgid(gid).gr_name)
        except KeyError:
            pass
    other = next((g.gr_name for g in grp.getgrall() if g.gr_name not in mine), None)
    if other is None:
        pytest.skip("no group the user is not in")
    assert job_class(tmp_path, policy_with_group(tmp_path, other)) == "production"
    assert job_class(tmp_path, str(POLICY)) == "production"
