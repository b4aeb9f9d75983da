# SPDX-License-Identifier: Apache-2.0
"""Loads the side-by-side harness once, as the module ``fidelity_harness`` (tests run with
``--import-mode=importlib``, so the folder is not a package the tests could import from)."""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

if "fidelity_harness" not in sys.modules:
    _spec = importlib.util.spec_from_file_location(
        "fidelity_harness", os.path.join(os.path.dirname(__file__), "harness.py"))
    assert _spec is not None and _spec.loader is not None
    _harness = importlib.util.module_from_spec(_spec)
    sys.modules["fidelity_harness"] = _harness
    _spec.loader.exec_module(_harness)


@pytest.fixture(scope="module")
def policy_plugin(slurm_lab) -> bool:
    """Whether the lab runs its policy's compiled job_submit.lua (the default; `lab up --no-job-submit`)."""
    conf = slurm_lab.run(["scontrol", "show", "config"]).stdout
    return any(line.split("=", 1)[0].strip() == "JobSubmitPlugins" and "lua" in line for line in conf.splitlines())
