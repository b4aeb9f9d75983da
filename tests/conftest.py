# SPDX-License-Identifier: Apache-2.0
"""Shared test fixtures.

``slurm_lab`` (session scope) brings up the real local Slurm lab, or reuses one that is up, healthy and
built from the same config, and hands tests a :class:`SlurmLab` with helpers to submit as the
unprivileged lab user and to poll job states with timeouts (never fixed sleeps). Tests that use it are
integration tests: mark them ``@pytest.mark.slurm``. Tests marked ``lab_restart`` (they stop and start
the lab) are moved to the end of the run.

``missing(reason)`` is the one way a test says its environment cannot run it: a skip with the reason,
and under ``CI=true`` a failure (CI's machines provide everything, so a skip there would hide a test
that never ran). ``needs_other_user`` asks :func:`slurm_gpu.lab.runtime.user_can_run` whether another
user can start this interpreter (not when it or the checkout lies in a directory only its owner can
enter: a pyenv Python or a clone under /root, mode 700); the C compiler and browser checks call
``missing`` too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from typing import Any, NoReturn

import pytest

from slurm_gpu.errors import SlurmGpuError
from slurm_gpu.lab import clients
from slurm_gpu.lab.config import LabPaths
from slurm_gpu.lab.control import (
    Lab,
    default_hooks,
    default_policy_path,
    lab_dir_from_env,
    policy_spec_factory,
    slurm_version,
)
from slurm_gpu.lab.runtime import user_can_run
from slurm_gpu.lab.spec import LabSpec

CI = os.environ.get("CI") == "true"


def missing(reason: str) -> NoReturn:
    """This environment cannot run the test: skip with ``reason``; under CI=true fail with it."""
    if CI:
        pytest.fail(f"{reason} (CI=true: CI must run this test, not skip it)")
    pytest.skip(reason)


_CAN_RUN: dict[tuple[str, str, str], bool] = {}


def needs_other_user(user: str, python: str | None = None, code: str = "import slurm_gpu") -> None:
    """``missing`` unless ``user`` can start ``python`` (default: this interpreter) and run ``code``."""
    python = python or sys.executable
    key = (python, user, code)
    if key not in _CAN_RUN:
        _CAN_RUN[key] = user_can_run(python, user, code)
    if not _CAN_RUN[key]:
        missing(f"the user {user} cannot run {python} -c {code!r}: the interpreter or the checkout is in a "
                "directory other users cannot enter (a pyenv Python, a clone under /root); "
                "make venv uses /usr/bin/python3")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "lab_restart: stops and restarts the Slurm lab; runs after all other tests")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.get_closest_marker("lab_restart") is not None)  # stable: keeps order


@dataclass
class SlurmLab:
    """A running lab, as the tests see it."""

    lab: Lab
    spec: LabSpec
    policy_path: str
    version: tuple[int, int, int]

    @property
    def slurm_conf(self) -> str:
        return self.lab.slurm_conf

    @property
    def user(self) -> str:
        return self.lab.user

    @property
    def paths(self) -> LabPaths:
        return self.lab.paths

    def env(self) -> dict[str, str]:
        """Environment for a client of the lab (SLURM_CONF, GPUSUB_POLICY)."""
        return clients.client_env(self.slurm_conf) | {"GPUSUB_POLICY": self.policy_path}

    def workdir(self, name: str = "t") -> str:
        """A fresh directory under the lab's jobs dir, owned by the lab user (job output goes here)."""
        d = os.path.join(self.paths.jobs_dir, f"{name}-{uuid.uuid4().hex[:8]}")
        os.makedirs(d)
        shutil.chown(d, self.user)
        return d

    def run(
        self,
        argv: list[str],
        *,
        as_root: bool = False,
        timeout_s: float = 30,
        cwd: str | None = None,
        check: bool = False,
        env_extra: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a command as the lab user (default) or root, with SLURM_CONF and GPUSUB_POLICY set."""
        extra = {"GPUSUB_POLICY": self.policy_path} | (env_extra or {})
        return clients.run(
            argv,
            self.slurm_conf,
            user=None if as_root else self.user,
            timeout_s=timeout_s,
            cwd=cwd,
            env_extra=extra,
            check=check,
        )

    def sbatch(self, argv: list[str], *, cwd: str | None = None, as_root: bool = False) -> int:
        """``sbatch --parsable`` as the lab user; returns the job id."""
        return clients.sbatch(argv, self.slurm_conf, user=None if as_root else self.user, cwd=cwd)

    def gpusub(
        self, argv: list[str], *, cwd: str | None = None, timeout_s: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run this checkout's ``gpusub`` as the lab user."""
        from slurm_gpu.lab.demo import find_gpusub

        exe = find_gpusub()
        if exe is None:
            pytest.fail("gpusub is not installed in this environment")
        return self.run([exe, *argv], cwd=cwd, timeout_s=timeout_s)

    def wait(
        self, job_id: int | str, states: set[str] | frozenset[str] = frozenset({"COMPLETED"}), timeout_s: float = 60
    ) -> str:
        """Poll until the job is in ``states`` or any final state; TimeoutError after ``timeout_s``."""
        return clients.wait_job(self.slurm_conf, job_id, states, timeout_s)

    def state(self, job_id: int | str) -> str:
        return clients.job_state(self.slurm_conf, job_id)

    def show_job(self, job_id: int | str) -> tuple[dict[str, str], list[clients.NodeAlloc]]:
        return clients.show_job(self.slurm_conf, job_id)

    def job_records(self, job_id: int | str) -> list[dict[str, str]]:
        """The job's records and its components' (het job) or tasks' (array), from the one job reader."""
        return clients.job_records(self.slurm_conf, job_id)

    def cancel(self, *job_ids: int | str) -> None:
        clients.run(["scancel", *map(str, job_ids)], self.slurm_conf, timeout_s=10)

    def json(self, argv: list[str]) -> Any:
        import json

        return json.loads(clients.run(argv, self.slurm_conf, timeout_s=20, check=True).stdout)


def lab_from_env() -> tuple[Lab, str]:
    policy = os.path.abspath(os.environ.get("SLURM_GPU_LAB_POLICY") or default_policy_path())
    return Lab(LabPaths(lab_dir_from_env()), say=lambda m: print(f"[lab] {m}")), policy


def ensure_lab(restart: bool = False) -> SlurmLab:
    """Bring the lab up (or keep the healthy one) and describe it."""
    if os.geteuid() != 0:
        pytest.fail("the Slurm lab tests need root (they start slurmctld/slurmd and create /dev/nvidia*)")
    lab, policy = lab_from_env()
    factory = policy_spec_factory(policy)
    try:
        lab.up(factory, hooks=default_hooks(), restart=restart, policy_path=policy)
    except SlurmGpuError as e:
        pytest.fail(f"slurm-gpu lab up failed: {e}")
    device_dir = lab._read("device-dir") or "/dev"
    # the lab's own copy of the policy: readable by the lab user even when this checkout is private
    return SlurmLab(lab=lab, spec=factory(device_dir), policy_path=lab._read("policy") or policy,
                    version=slurm_version())


@pytest.fixture(scope="session")
def slurm_lab() -> SlurmLab:
    return ensure_lab()


@pytest.fixture(scope="module")
def slurm_alone(slurm_lab: SlurmLab):
    """Slurm without the site policy, for a module of tests that measure what Slurm itself does with
    sbatch's options: the lab's job_submit.lua passes every job through unchanged meanwhile, and the
    script it had (the lab policy, compiled) is put back afterwards. JobSubmitPlugins stays ``lua``, so
    nothing restarts: slurmctld re-reads the script when its mtime moves (the installer moves it)."""
    from slurm_gpu.lab.jobsubmit import PASS_THROUGH, install_text

    conf_dir = os.path.dirname(slurm_lab.slurm_conf)
    path = os.path.join(conf_dir, "job_submit.lua")
    try:
        with open(path, encoding="utf-8") as fh:
            before = fh.read()
    except FileNotFoundError:
        yield  # the lab runs without the plugin
        return
    install_text(PASS_THROUGH, conf_dir)
    try:
        yield
    finally:
        install_text(before, conf_dir)
