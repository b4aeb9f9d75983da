# SPDX-License-Identifier: Apache-2.0
"""The bundled lab serves static MIG slices (issue 20 item 5, issue 19 item 6): node a100mig1 (policy node
type a100x4mig, ``mig_mode: static``) has its slices detected by Slurm's own gpu/nvml over the stand-in NVML
(gres.conf ``NodeName=a100mig1 AutoDetect=nvml``, slurmd in its own mount namespace), and the README's
``gpusub --gpu-fraction 0.25 -t 30 notebook.sh`` and a native ``--gres=gpu:a100_2g.20gb:1`` run to COMPLETED
with ``CUDA_VISIBLE_DEVICES`` holding a MIG UUID of the right profile that the node's NVML serves.
Whole-GPU a100n1 keeps its 4 GPUs."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from slurm_gpu.lab import nodehooks

pytestmark = pytest.mark.slurm

NODE = "a100mig1"


def _detected(slurm_lab) -> bool:
    return f"NodeName={NODE} AutoDetect=nvml" in Path(slurm_lab.paths.conf_dir, "gres.conf").read_text()


def _uuids_of(slurm_lab, profile: str) -> set[str]:
    """MIG UUIDs of the node's ``profile`` instances, read from the node's stand-in state file."""
    text = Path(nodehooks.nvml_dir(slurm_lab.paths.lab_dir), f"{NODE}.state").read_text()
    names = {m.group(1): m.group(2) for m in re.finditer(r"^profile\.([0-9]+)=[0-9]+:([^:]+):", text, re.M)}
    gis = {(m.group(1), m.group(2)): names[m.group(3)]
           for m in re.finditer(r"^gpu\.([0-9]+)\.gi\.([0-9]+)=([0-9]+):", text, re.M)}
    return {m.group(3) for m in re.finditer(r"^gpu\.([0-9]+)\.ci\.([0-9]+)\.[0-9]+=[0-9]+:(\S+)$", text, re.M)
            if gis.get((m.group(1), m.group(2))) == profile}


@pytest.fixture(scope="module")
def mig_lab(slurm_lab):
    if NODE not in slurm_lab.spec.node_names:
        pytest.skip(f"the lab policy has no {NODE}")
    if not _detected(slurm_lab):
        pytest.skip("no gpu_nvml.so or no C compiler: a100mig1 reads the emitted gres.conf lines")
    return slurm_lab


def test_slurm_registers_the_detected_slices_and_a100n1_stays_whole(mig_lab):
    show = mig_lab.run(["scontrol", "show", "node", NODE], check=True).stdout
    assert re.search(r"Gres=gpu:a100_2g\.20gb:12\S*,gpu:a100_1g\.10gb:4", show), show
    whole = mig_lab.run(["scontrol", "show", "node", "a100n1"], check=True).stdout
    assert re.search(r"Gres=gpu:a100:4\b", whole), whole
    log = Path(mig_lab.paths.log_dir, f"slurmd.{NODE}.log").read_text(errors="replace")
    assert "fatal" not in log


def _run_job(lab, argv: list[str], name: str, submit: str = "sbatch") -> tuple[str, str]:
    work = lab.workdir(name)
    script = os.path.join(work, "job.sh")
    Path(script).write_text("#!/bin/bash\necho CVD=$CUDA_VISIBLE_DEVICES\n")
    os.chmod(script, 0o755)
    if submit == "gpusub":
        r = lab.gpusub([*argv, "--parsable", "-o", "out.txt", "job.sh"], cwd=work)
    else:
        r = lab.run(["sbatch", "--parsable", *argv, "-o", "out.txt", "job.sh"], cwd=work)
    assert r.returncode == 0, r.stdout + r.stderr
    job = r.stdout.strip().splitlines()[-1].split(";")[0]
    state = lab.wait(job, timeout_s=90)
    assert state == "COMPLETED", (state, lab.show_job(job)[0])
    return job, Path(work, "out.txt").read_text().strip().removeprefix("CVD=")


def test_readme_gpu_fraction_runs_on_a_slice(mig_lab):
    """README: ``gpusub --gpu-fraction 0.25 -t 30 notebook.sh`` -> class mig-small, --gres=gpu:a100_2g.20gb:1."""
    job, cvd = _run_job(mig_lab, ["--gpu-fraction", "0.25", "-t", "30"], "frac", submit="gpusub")
    fields, _ = mig_lab.show_job(job)
    assert (fields.get("Partition"), fields.get("NodeList")) == ("mig", NODE), fields
    assert cvd in _uuids_of(mig_lab, "2g.20gb"), cvd


def test_native_static_mig_request_gets_the_mig_uuid(mig_lab):
    job, cvd = _run_job(mig_lab, ["-p", "mig", "-t", "5", "--gres=gpu:a100_1g.10gb:1"], "native")
    assert cvd in _uuids_of(mig_lab, "1g.10gb"), cvd
    assert cvd not in _uuids_of(mig_lab, "2g.20gb")


def _hooks_log(lab) -> Path:
    return Path(nodehooks.prefix(lab.paths.lab_dir), "log", "node-hooks.log")


def _job_lines(lab, job: str) -> list[str]:
    try:
        text = _hooks_log(lab).read_text(errors="replace")
    except FileNotFoundError:
        return []
    return [ln for ln in text.splitlines() if f": job {job}: " in ln]


@pytest.fixture(scope="module")
def hooked(mig_lab):
    if not mig_lab.lab.paths or "Prolog=" not in Path(mig_lab.slurm_conf).read_text():
        pytest.skip("the lab runs without slurm-gpu's node hooks")
    return mig_lab


def test_hooks_see_the_slice_slurm_chose(hooked):
    """The prolog and epilog find the job's MIG device (Slurm's CUDA_VISIBLE_DEVICES) in the node's NVML and log
    its parent GPU's identity (index, minor, bus id, UUID) and GPU-/compute-instance ids; the task's
    CUDA_VISIBLE_DEVICES is the same UUID (the TaskProlog changes nothing for a static slice)."""
    job, cvd = _run_job(hooked, ["-p", "mig", "-t", "5", "--gres=gpu:a100_2g.20gb:1"], "view")
    text = Path(nodehooks.nvml_dir(hooked.paths.lab_dir), f"{NODE}.state").read_text()
    gpu = next(m.group(1) for m in re.finditer(r"^gpu\.([0-9]+)\.ci\.[0-9]+\.[0-9]+=[0-9]+:(\S+)$", text, re.M)
               if m.group(2) == cvd)
    parent_uuid = re.search(rf"^gpu\.{gpu}\.uuid=(\S+)$", text, re.M).group(1)  # type: ignore[union-attr]
    lines = _job_lines(hooked, job)
    for phase in ("prolog", "epilog"):
        seen = [ln for ln in lines if f"{phase}: MIG slices (Slurm's CUDA_VISIBLE_DEVICES) {cvd}=GPU {gpu}/" in ln]
        assert seen and parent_uuid in seen[0], lines
    assert not [ln for ln in lines if "misconfigured" in ln], lines


def test_a_slice_the_driver_no_longer_has_is_logged_and_fails_no_job(hooked):
    """MIG changed under a running slurmd (here: the node's NVML serves other MIG UUIDs than slurmd detected):
    the prolog logs the node's misconfiguration, the job still runs to COMPLETED, nothing is drained."""
    state = Path(nodehooks.nvml_dir(hooked.paths.lab_dir), f"{NODE}.state")
    before = state.read_text()
    changed = re.sub(r"(:MIG-)([0-9a-f])", lambda m: m.group(1) + ("1" if m.group(2) == "0" else "0"), before)
    assert changed != before
    state.write_text(changed)
    try:
        job, cvd = _run_job(hooked, ["-p", "mig", "-t", "5", "--gres=gpu:a100_1g.10gb:1"], "drift")
    finally:
        state.write_text(before)
    assert cvd in _uuids_of(hooked, "1g.10gb")  # Slurm's own view, from its detection at start
    lines = _job_lines(hooked, job)
    assert [ln for ln in lines if "slurm-gpu-prolog[" in ln and f"node misconfigured: Slurm gave the job MIG device "
            f"{cvd}, which this node's NVML does not have" in ln], lines
    node = hooked.run(["scontrol", "show", "node", NODE], check=True).stdout
    assert "DRAIN" not in node, node


def test_epilog_compares_the_slices_layout_with_the_detected_one_and_the_policy(hooked):
    """The epilog compares the node's MIG devices (every GPU's, from its NVML) with what slurmd detected at
    start and slurmctld schedules (the node's registered Gres=), and the layout of the GPU the job's slice is
    on with the policy's mig_layout: here the 1g.10gb instances vanish from the node's NVML while the job
    runs (as if MIG had been changed under slurmd), so the epilog logs both as the node's misconfiguration;
    it rebuilds nothing (slurmd schedules what it detected) and drains nothing."""
    import time

    state = Path(nodehooks.nvml_dir(hooked.paths.lab_dir), f"{NODE}.state")
    before = state.read_text()
    work = hooked.workdir("layout")
    Path(work, "job.sh").write_text("#!/bin/bash\necho CVD=$CUDA_VISIBLE_DEVICES\nsleep 8\n")
    r = hooked.run(["sbatch", "--parsable", "-p", "mig", "-t", "5", "--gres=gpu:a100_2g.20gb:1", "-o", "out.txt",
                    "job.sh"], cwd=work)
    assert r.returncode == 0, r.stderr
    job = r.stdout.strip().split(";")[0]
    try:
        deadline = time.monotonic() + 60
        while not [ln for ln in _job_lines(hooked, job) if "prolog: MIG slices" in ln]:
            assert time.monotonic() < deadline, _job_lines(hooked, job)
            time.sleep(0.5)
        gone = re.compile(r"gpu\.[0-9]+\.(gi|ci)\.13[.=]")  # the 1g.10gb instances (GI 13)
        state.write_text("".join(ln for ln in before.splitlines(True) if not gone.match(ln)))
        assert hooked.wait(job, timeout_s=90) == "COMPLETED"
    finally:
        state.write_text(before)
    cvd = Path(work, "out.txt").read_text().split("CVD=", 1)[1].split()[0]
    gpu = next(m.group(1) for m in re.finditer(r"^gpu\.([0-9]+)\.ci\.[0-9]+\.[0-9]+=[0-9]+:(\S+)$", before, re.M)
               if m.group(2) == cvd)
    lines = _job_lines(hooked, job)
    assert [ln for ln in lines if "slurm-gpu-epilog[" in ln and f"node misconfigured: GPU {gpu}'s MIG layout is "
            "2g.20gb+2g.20gb+2g.20gb, not the policy's" in ln], lines
    assert [ln for ln in lines if "slurm-gpu-epilog[" in ln and "node misconfigured: its MIG devices are not what "
            "slurmd detected and schedules (1g.10gb: slurmd registered 4, the driver has 0;" in ln], lines
    node = hooked.run(["scontrol", "show", "node", NODE], check=True).stdout
    assert "DRAIN" not in node, node
