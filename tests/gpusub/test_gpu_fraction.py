# SPDX-License-Identifier: Apache-2.0
"""--gpu-fraction: the way a user asks for part of a GPU, and the policy classes it reaches."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from slurm_gpu.slurm.sbatch.parse import OptionError, parse_submission
from slurm_gpu.slurm.sbatch.to_request import to_job_request
from slurm_gpu.slurm.sbatch.values import parse_gpu_fraction

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNIVERSITY = os.path.join(ROOT, "examples", "policies", "university.yaml")


@pytest.mark.parametrize("text,value", [("0.25", 0.25), ("1/7", 1 / 7), ("30%", 0.3), (" .5 ", 0.5)])
def test_fraction_forms(text, value):
    assert parse_gpu_fraction(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["0", "1", "1.5", "-0.1", "abc", "1/0", "%", "100%"])
def test_bad_fractions_name_the_forms(text):
    with pytest.raises(ValueError, match="accepted: a fraction of one GPU"):
        parse_gpu_fraction(text)
    with pytest.raises(OptionError, match="--gpu-fraction"):
        parse_submission(["--gpu-fraction", text, "job.sh"], {}, None)


def test_fraction_reaches_the_request():
    sub = parse_submission(["--gpu-fraction=1/7", "-t", "20", "job.sh"], {}, None)
    assert to_job_request(sub).gpu_fraction == pytest.approx(1 / 7)


def _explain(tmp_path, policy: str, *args: str) -> dict:
    script = tmp_path / "notebook.sh"
    script.write_text("#!/bin/bash\npython small_experiment.py\n")
    gpusub = os.path.join(os.path.dirname(sys.executable), "gpusub")
    r = subprocess.run([gpusub, "--explain", "--json", "--policy", policy, *args, str(script)],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, SLURM_CONF="/no/such/slurm.conf"))
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def test_university_small_job_gets_a_mig_slice(tmp_path):
    # the university policy turns fractions up to half a GPU into A100 MIG slices in partition mig
    d = _explain(tmp_path, UNIVERSITY, "--gpu-fraction=0.25", "--time=30")
    assert d["accepted"] and d["class"] == "mig-small" and d["partition"] == "mig"
    assert d["gres"] == "gpu:a100_2g.20gb:1"  # 2/7 of an A100 is the smallest slice >= 0.25


def test_fraction_with_whole_gpus_is_rejected_with_a_fix(tmp_path):
    d = _explain(tmp_path, UNIVERSITY, "--gpu-fraction=0.25", "--gpus=h100:1", "--time=30")
    assert not d["accepted"] and "fraction" in d["message"]
