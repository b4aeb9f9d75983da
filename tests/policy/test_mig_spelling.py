# SPDX-License-Identifier: Apache-2.0
"""``policy check`` warns where the installed Slurm's gpu/nvml would name a static MIG profile otherwise than
the policy (issue 20 item 3: 22.05 names slices from the instance's memory, ``3g.39gb`` for the A100 80GB's
3g.40gb; 24.11 from the NVML device name). The release fact is release.py's ``mig_profile_from_attributes``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from slurm_gpu.policy import load_policy
from slurm_gpu.policy.lint import mig_spelling_warnings
from slurm_gpu.sharing.mig import detected_profile, profile_from_attributes
from slurm_gpu.slurm.release import spelling_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIG_POLICY = os.path.join(ROOT, "examples", "policies", "mig", "university-mig.yaml")  # a100mig: 3g.40gb
LAB_POLICY = os.path.join(ROOT, "examples", "policies", "university.yaml")  # a100mig1: 2g.20gb, 1g.10gb


@pytest.mark.parametrize("gpu,mem,profile,name22", [
    ("a100", 80, "3g.40gb", "3g.39gb"), ("a100", 80, "7g.80gb", "7g.79gb"), ("a100", 80, "2g.20gb", "2g.20gb"),
    ("a100", 80, "1g.10gb", "1g.10gb"), ("a100", 80, "1g.10gb+me", "1g.10gb+me"), ("a100", 40, "7g.40gb", "7g.40gb"),
    ("a100", 40, "3g.20gb", "3g.20gb"), ("h100", 80, "3g.40gb", "3g.40gb"), ("h100", 80, "7g.80gb", "7g.79gb"),
    ("l40s", 48, "3g.40gb", None),  # no recorded table: cannot tell
])
def test_detected_profile_per_release(gpu, mem, profile, name22):
    assert detected_profile(gpu, mem, profile, spelling_for((22, 5)).mig_profile_from_attributes) == name22
    assert detected_profile(gpu, mem, profile, spelling_for((24, 11)).mig_profile_from_attributes) == profile


def test_rounding_is_halves_away_from_zero():
    assert profile_from_attributes(1, 9728) == "1g.10gb"  # 9.5 GiB
    assert profile_from_attributes(3, 40192) == "3g.39gb"  # 39.25 GiB


def test_warnings_name_the_node_type_and_both_spellings():
    policy = load_policy(MIG_POLICY)
    w = mig_spelling_warnings(policy, True, "22.05.8")
    assert len(w) == 1 and w[0].startswith("node_types.a100mig.mig_layout: Slurm 22.05.8's gpu/nvml")
    assert "'3g.39gb'" in w[0] and "gpu:a100_3g.39gb, not gpu:a100_3g.40gb" in w[0]
    assert mig_spelling_warnings(policy, False, "24.11.5") == []
    assert mig_spelling_warnings(load_policy(LAB_POLICY), True, "22.05.8") == []  # the lab's profiles agree


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="needs sbatch (the installed release)")
def test_policy_check_warns_for_the_installed_release():
    from slurm_gpu.adapters.slurm.cli import SbatchCli

    version = SbatchCli().version()  # sbatch --version, as the check asks it
    r = subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", "policy", "check", "--json", MIG_POLICY],
                       capture_output=True, text=True, timeout=120, env=dict(os.environ, SLURM_CONF="/nonexistent"))
    assert r.returncode == 0, r.stderr
    warned = [w for w in json.loads(r.stdout)["warnings"] if "gpu/nvml" in w]
    assert bool(warned) == spelling_for(version).mig_profile_from_attributes, (version, warned)
