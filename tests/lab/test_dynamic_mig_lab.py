# SPDX-License-Identifier: Apache-2.0
"""The bundled lab serves the README's per-job MIG and MPS examples (issue 19 item 6): a100n1 (policy node type
a100x4, ``mig_mode: dynamic``) has the stand-in NVIDIA driver of its recorded machine (whole GPUs, MIG off;
lab/control.py ``_give_drivers``), so the node hooks make the job's layout there and undo it afterwards.
Slurm sees four whole GPUs (gpu:a100:4); the layout is the hooks' work, from the token in the Comment."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from slurm_gpu.lab import nodehooks

pytestmark = pytest.mark.slurm

NODE = "a100n1"
MIG_UUID = re.compile(r"MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _state(lab) -> Path:
    return Path(nodehooks.nvml_dir(lab.paths.lab_dir), f"{NODE}.state")


@pytest.fixture(scope="module")
def dyn_lab(slurm_lab):
    if NODE not in slurm_lab.spec.node_names or "Prolog=" not in Path(slurm_lab.slurm_conf).read_text():
        pytest.skip("the lab runs without slurm-gpu's node hooks or without a100n1")
    if not _state(slurm_lab).exists():
        pytest.skip("no stand-in driver on a100n1 (SLURM_GPU_LAB_DRIVERS=0 or no C compiler)")
    return slurm_lab


def _mig_fields(text: str) -> dict[str, str]:
    return {k: v for k, v in (ln.split("=", 1) for ln in text.splitlines() if "=" in ln)
            if re.match(r"gpu\.[0-9]+\.(mig_current|mig_pending|gi\.|ci\.)", k)}


def _run(lab, argv: list[str], name: str) -> tuple[str, str]:
    work = lab.workdir(name)
    Path(work, "train.sh").write_text(
        "#!/bin/bash\necho CVD=$CUDA_VISIBLE_DEVICES\necho PIPE=$CUDA_MPS_PIPE_DIRECTORY\n")
    os.chmod(os.path.join(work, "train.sh"), 0o755)
    r = lab.gpusub([*argv, "--parsable", "-t", "5", "-o", "out.txt", "train.sh"], cwd=work)
    assert r.returncode == 0, r.stdout + r.stderr
    job = r.stdout.strip().splitlines()[-1].split(";")[0]
    state = lab.wait(job, timeout_s=90)
    out = Path(work, "out.txt").read_text(errors="replace")
    assert state == "COMPLETED", (state, out, lab.show_job(job)[0])
    return job, out


def test_readme_mig_layout_runs_on_a100n1_and_the_gpu_is_restored(dyn_lab):
    """README: ``gpusub --mig 3g.40gb:2 train.sh`` -> one whole a100 of a100n1, two 3g.40gb instances made by the
    prolog (the job sees two MIG UUIDs), and MIG off again on every GPU when the job is done."""
    before = _mig_fields(_state(dyn_lab).read_text())
    job, out = _run(dyn_lab, ["--mig", "3g.40gb:2"], "mig")
    fields, _ = dyn_lab.show_job(job)
    assert fields.get("NodeList") == NODE and "slurm-gpu:mig=3g.40gb:2" in (fields.get("Comment") or ""), fields
    cvd = re.search(r"^CVD=(.*)$", out, re.M).group(1)  # type: ignore[union-attr]
    uuids = cvd.split(",")
    assert len(uuids) == 2 and all(MIG_UUID.fullmatch(u) for u in uuids), out
    deadline = time.monotonic() + 30  # the epilog restores the layout after the job is COMPLETED
    while _mig_fields(_state(dyn_lab).read_text()) != before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _mig_fields(_state(dyn_lab).read_text()) == before


def test_readme_mps_share_runs_on_a100n1(dyn_lab):
    """README's MPS example on the lab's node with a driver: ``gpusub --mps 25 --gpus=a100:1`` -> the task sees
    its per-job pipe directory."""
    job, out = _run(dyn_lab, ["--mps", "25", "--gpus=a100:1"], "mps")
    pipe = re.search(r"^PIPE=(.*)$", out, re.M).group(1)  # type: ignore[union-attr]
    assert pipe.endswith(f"/mps/{job}/pipe"), out
