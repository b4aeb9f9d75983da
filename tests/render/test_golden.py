# SPDX-License-Identifier: Apache-2.0
"""Golden files of rendered scripts for the option spellings of Slurm 22.05, 23.02, 23.11, 24.11, 25.11.

Whole-text comparison with a unified diff. A missing golden file FAILS; files are (re)written only
with SLURM_GPU_UPDATE_GOLDEN=1, and the diff is reviewed in the commit. Each file is what gpusub's real
pipeline (``prepare()``: parse, classify with the lab policy, plan from the lab topology, render)
produces for the version, as ``gpusub --dry-run`` prints it.
"""

from __future__ import annotations

import difflib
import os

import pytest

from slurm_gpu.submit.gpusub import prepare, render_prepared

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN_DIR = os.path.join(ROOT, "tests", "golden")
POLICY = os.path.join(ROOT, "examples", "policies", "university.yaml")
UPDATE = os.environ.get("SLURM_GPU_UPDATE_GOLDEN") == "1"
VERSIONS = {"22.05": "22.05.8", "23.02": "23.02.7", "23.11": "23.11.10", "24.11": "24.11.5", "25.11": "25.11.0"}
TORCHRUN = ("#!/bin/bash\n#SBATCH --time=2:00:00\n#SBATCH --job-name=llama-7b\n#SBATCH --gres=gpu:h100:4\n"
            "#SBATCH -c 16\ntorchrun --standalone --nproc_per_node=4 train.py \"$@\"\n")
SRUN = ("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --ntasks-per-node=8\n#SBATCH --cpus-per-task=2\n#SBATCH --gres=gpu:8\n"
        "#SBATCH -t 30\nsrun python train.py\n")
CPU = "#!/bin/bash\nsrun hostname\n"
SCENARIOS = {
    "torchrun-one-task": (["--signal=B:USR1@90", "train.sh", "--lr=3e-4"], TORCHRUN),
    "srun-inside": (["train.sh"], SRUN),
    "per-gpu-strict": (["--launch=per-gpu", "--gpu-isolation=strict", "-G", "h100:4", "-t", "60", "train.sh"],
                       "#!/bin/bash\npython train.py\n"),
    "cpu-only": (["-J", "it's \"quoted\" $(x)", "--comment=a#b c", "-n", "2", "-t", "20", "job.sh", "--in",
                  "a b", "$HOME", "it's"], CPU),
}


class NoSlurm:
    def version(self):
        raise AssertionError("the golden files need no Slurm")


def rendered_for(name: str, version: str, tmp_path) -> str:
    argv, script = SCENARIOS[name]
    path = tmp_path / argv[argv.index(next(a for a in argv if a.endswith(".sh")))]
    path.write_text(script)
    argv = [str(path) if a.endswith(".sh") else a for a in argv]
    env = {"GPUSUB_SLURM_VERSION": VERSIONS[version], "GPUSUB_POLICY": POLICY, "XDG_CACHE_HOME": str(tmp_path),
           "HOME": str(tmp_path), "SBATCH_ACCOUNT": "ml"}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        prep = prepare([os.path.basename(a) if a == str(path) else a for a in argv], env, NoSlurm())
    finally:
        os.chdir(cwd)
    rendered = render_prepared(prep, env)  # as gpusub renders it: the SBATCH_* variables go back to the job
    return rendered.text + "".join(f"# sbatch argv: {a!r}\n" for a in rendered.sbatch_argv)


PARAMS = [(s, v) for s in SCENARIOS for v in VERSIONS]


@pytest.mark.parametrize("name, version", PARAMS, ids=[f"{s}-{v}" for s, v in PARAMS])
def test_golden(name, version, tmp_path):
    text = rendered_for(name, version, tmp_path)
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
