# SPDX-License-Identifier: Apache-2.0
"""Golden files of rendered scripts for the option spellings of Slurm 22.05, 23.02, 23.11, 24.11, 25.11.

Whole-text comparison with a unified diff. A missing golden file FAILS; files are (re)written only
with SLURM_GPU_UPDATE_GOLDEN=1, and the diff is reviewed in the commit. The plans are built here from
each version's SlurmSpelling (not by the binding planner) so that these files change only when the
renderer or the spelling table does.
"""

from __future__ import annotations

import difflib
import os

import pytest

from slurm_gpu.binding import BindingPlan
from slurm_gpu.render import render_script
from slurm_gpu.request import Decision
from slurm_gpu.sbatch_options import parse_submission
from slurm_gpu.slurm_version import spelling_for

GOLDEN_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden")
UPDATE = os.environ.get("SLURM_GPU_UPDATE_GOLDEN") == "1"
VERSIONS = {"22.05": (22, 5, 8), "23.02": (23, 2, 7), "23.11": (23, 11, 10), "24.11": (24, 11, 5), "25.11": (25, 11, 0)}
PAYLOAD = "/home/alice/.gpusub/spool/train.sh.x1y2z3/payload"
SCRIPT = "#!/bin/bash\n#SBATCH --time=2:00:00\n#SBATCH --job-name=llama-7b\n#SBATCH --gres=gpu:h100:4\npython train.py\n"
PRELUDE = 'export LOCAL_RANK="${SLURM_LOCALID:-0}" RANK="${SLURM_PROCID:-0}" WORLD_SIZE="${SLURM_NTASKS:-1}"'


def plan_for(spelling, isolation: str, launch: str) -> BindingPlan:
    srun = ["--cpu-bind=cores", "--mem-bind=local", "--distribution=block:block"]
    if isolation == "strict":
        srun.append(spelling.tres_bind("single:1") if spelling.has_tres_bind else spelling.gpu_bind("single:1"))
    elif spelling.has_allow_task_sharing:
        srun.append("--gres-flags=allow-task-sharing")
    return BindingPlan(
        sbatch_options=("--ntasks=4", "--cpus-per-gpu=4", "--gres-flags=enforce-binding", "--sockets-per-node=1"),
        srun_options=tuple(srun), env=(("OMP_NUM_THREADS", "4"),), tasks=4, cpus_per_task=4, gpus_per_task=1,
        isolation=isolation, launch=launch, explanation=("golden",), task_prelude=PRELUDE if launch == "srun" else "",
    )


def scenario(name: str, spelling):
    decision = Decision(accepted=True, job_class="production", partition="batch", qos="normal",
                        gres="gpu:h100:4", gpu_type="h100", gpus=4)
    if name == "cpu-only":
        sub = parse_submission(["-J", "it's \"quoted\" $(x)", "--comment=a#b c", "-n", "2", "job.sh", "--in",
                                "a b", "$HOME", "it's"], {}, "#!/bin/bash\nsrun hostname\n")
        return sub, Decision(accepted=True, job_class="cpu", partition="batch", qos="normal"), None
    sub = parse_submission(["--gpu-isolation=" + ("strict" if "strict" in name else "shared"), "train.sh",
                            "--lr=3e-4"], {"SBATCH_ACCOUNT": "ml"}, SCRIPT)
    isolation = "strict" if "strict" in name else "shared"
    launch = "batch" if name.startswith("batch") else "srun"
    return sub, decision, plan_for(spelling, isolation, launch)


SCENARIOS = ["batch-shared", "srun-shared", "srun-strict", "cpu-only"]
PARAMS = [(s, v) for s in SCENARIOS for v in VERSIONS]


@pytest.mark.parametrize("name, version", PARAMS, ids=[f"{s}-{v}" for s, v in PARAMS])
def test_golden(name, version):
    spelling = spelling_for(VERSIONS[version])
    sub, decision, plan = scenario(name, spelling)
    rendered = render_script(sub, decision, plan, spelling, PAYLOAD)
    text = rendered.text + "".join(f"# sbatch argv: {a!r}\n" for a in rendered.sbatch_argv)
    path = os.path.join(GOLDEN_DIR, f"render-{name}-{version}.sh")
    if UPDATE:
        os.makedirs(GOLDEN_DIR, exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    if not os.path.exists(path):
        pytest.fail(f"golden file {path} is missing; create it with SLURM_GPU_UPDATE_GOLDEN=1 and review it")
    with open(path, encoding="utf-8") as fh:
        want = fh.read()
    if text != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True), path, "rendered"))
        pytest.fail(f"rendered script differs from {path} (SLURM_GPU_UPDATE_GOLDEN=1 rewrites it):\n{diff}")


def test_no_stray_golden_files():
    expected = {f"render-{s}-{v}.sh" for s, v in PARAMS}
    present = {f for f in os.listdir(GOLDEN_DIR) if f.startswith("render-")} if os.path.isdir(GOLDEN_DIR) else set()
    assert present <= expected, f"golden files no test reads: {sorted(present - expected)}"
