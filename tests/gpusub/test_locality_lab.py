# SPDX-License-Identifier: Apache-2.0
"""Locality acceptance of issue 8, against the real lab (marker ``slurm``).

gpusub jobs of 1, 2, 4 and 8 h100 and 1-4 a100 GPUs, written the way users write them (``#SBATCH``
lines: one task with torchrun inside, without a CPU count or with the ``-c`` users give it; or
``--ntasks-per-node=N -c K`` with srun inside), submitted by the lab user with ``gpusub`` and
nothing else. While each job runs, ``scontrol show job -d`` must show (a) the job exactly as asked
(tasks, CPUs, GPUs: what plain sbatch gives it) and (b) the locality rule: every allocated GPU has at
least one of the job's cores on its socket per gres.conf ``Cores=``, and no core of the job is remote
to all of its GPUs (slurm_gpu.locality.check_job at one core per GPU). Also with a CPU-only job
holding 8 cores of the node first. Where the rule cannot hold without changing the job (one task,
``-c 8``, GPUs on two sockets: one task's cores come from one socket), ``gpusub --explain --json``
must warn, and the job must still run as asked.
"""

from __future__ import annotations

import json
import os
import re

import pytest

from slurm_gpu.placement.locality import NodeAlloc, check_job, parse_gres_conf

pytestmark = pytest.mark.slurm

SHARE = {"h100": 4, "a100": 8}  # cores per GPU users give (the GPU's share of its socket)
ONE_SOCKET_WARNING = "its cores come from one socket"


def script(gtype: str, gpus: int, form: str) -> tuple[str, int, int | None]:
    """(script text, tasks, CPUs) of a job as users write it; tasks and CPUs are what sbatch gives it
    (CPUs None: no CPU count, so the partition's DefCpuPerGPU per GPU)."""
    head = [f"--gres=gpu:{gtype}:{gpus}", "--time=10"]
    if form == "srun":
        k = SHARE[gtype]
        head += [f"--ntasks-per-node={gpus}", f"--cpus-per-task={k}"]
        body, tasks, cpus = "srun sleep 120", gpus, gpus * k
    else:
        body, tasks, cpus = f"torchrun --standalone --nproc_per_node={gpus} train.py", 1, None
        if form.startswith("c"):
            cpus = int(form[1:])
            head.append(f"--cpus-per-task={cpus}")
    text = ("#!/bin/bash\n" + "".join(f"#SBATCH {h}\n" for h in head)
            + "# the lab has no torchrun: a stand-in that runs as long as training would\n"
            + "torchrun() { sleep 120; }\n" + body + "\n")
    return text, tasks, cpus


def one_task_cpus(gtype: str, gpus: int) -> str:
    return f"c{min(SHARE[gtype] * gpus, 32)}"


SIZES = [("h100", 1), ("h100", 2), ("h100", 4), ("h100", 8), ("a100", 1), ("a100", 2), ("a100", 3), ("a100", 4)]
CASES = [(t, n, f) for t, n in SIZES for f in ("torchrun", one_task_cpus(t, n), "srun")]
WARNED = [("h100", 8, "c8"), ("a100", 4, "c8")]  # one task, 8 CPUs, GPUs on both sockets


def gres_table(lab) -> dict:
    with open(os.path.join(os.path.dirname(lab.slurm_conf), "gres.conf"), encoding="utf-8") as fh:
        return parse_gres_conf(fh.read())


def detail(lab, job_id) -> list[NodeAlloc]:
    """The job's per-node allocations (the lab helper's job reader: squeue's JSON)."""
    return lab.show_job(job_id)[1]


def write_job(lab, gtype, gpus, form) -> tuple[str, str, int, int | None]:
    work = lab.workdir("loc8")
    text, tasks, cpus = script(gtype, gpus, form)
    path = os.path.join(work, "train.sh")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(path, 0o755)
    return work, path, tasks, cpus


def explain(lab, args, work) -> dict:
    r = lab.gpusub(["--explain", "--json", *args], cwd=work)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def submit(lab, args, work) -> int:
    r = lab.gpusub(["--json", *args], cwd=work)
    assert r.returncode == 0, r.stderr
    return int(json.loads(r.stdout)["job_id"])


def running_detail(lab, job_id) -> list[NodeAlloc]:
    assert lab.wait(job_id, {"RUNNING"}, timeout_s=180) == "RUNNING", detail(lab, job_id)
    return detail(lab, job_id)


def assert_as_asked(lab, job_id, allocs, gpus, tasks, cpus) -> None:
    fields, _ = lab.show_job(job_id)
    if cpus is None:  # Slurm's own default for the partition the job landed in
        part = lab.run(["scontrol", "show", "partition", fields["Partition"]], as_root=True, check=True).stdout
        cpus = gpus * int(re.search(r"DefCpuPerGPU=(\d+)", part).group(1))
    assert len(allocs) == 1 and len(allocs[0].gpu_idx) == gpus, allocs
    assert (fields["NumTasks"], fields["NumCPUs"]) == (str(tasks), str(cpus)), fields
    assert len(allocs[0].cpu_ids) == cpus, allocs


def hold_cores(lab, node) -> int:
    """A CPU-only job of 8 cores started on ``node`` first (the scheduler gives it socket 0's first cores)."""
    work = lab.workdir("hold")
    blocker = lab.sbatch(["-w", node, "-n1", "-c8", "--mem=1G", "-t", "3", "--wrap", "sleep 150"], cwd=work,
                         as_root=True)
    assert lab.wait(blocker, {"RUNNING"}, timeout_s=120) == "RUNNING"
    return blocker


@pytest.mark.parametrize("gtype, gpus, form", CASES, ids=[f"{t}x{n}-{f}" for t, n, f in CASES])
def test_job_as_users_write_it_meets_the_rule(slurm_lab, gtype, gpus, form):
    work, path, tasks, cpus = write_job(slurm_lab, gtype, gpus, form)
    plan = explain(slurm_lab, [path], work)
    assert not any(ONE_SOCKET_WARNING in w for w in plan["warnings"]), plan["warnings"]
    job = submit(slurm_lab, [path], work)
    try:
        allocs = running_detail(slurm_lab, job)
        assert_as_asked(slurm_lab, job, allocs, gpus, tasks, cpus)
        assert check_job(allocs, gres_table(slurm_lab), cpus_per_gpu=1) == [], allocs
    finally:
        slurm_lab.cancel(job)


BUSY = [("h100", 1, "srun"), ("h100", 2, "torchrun"), ("h100", 4, "torchrun"), ("h100", 4, "c16"),
        ("h100", 4, "srun"), ("a100", 2, "srun"), ("a100", 3, "torchrun"), ("a100", 3, "c24"),
        ("a100", 4, "torchrun")]


@pytest.mark.parametrize("gtype, gpus, form", BUSY, ids=[f"{t}x{n}-{f}" for t, n, f in BUSY])
def test_rule_holds_with_cores_held_by_another_job(slurm_lab, gtype, gpus, form):
    node = {"h100": "h100n2", "a100": "a100n1"}[gtype]
    work, path, tasks, cpus = write_job(slurm_lab, gtype, gpus, form)
    blocker = hold_cores(slurm_lab, node)
    job = None
    try:
        job = submit(slurm_lab, ["-w", node, path], work)
        allocs = running_detail(slurm_lab, job)
        assert_as_asked(slurm_lab, job, allocs, gpus, tasks, cpus)
        assert check_job(allocs, gres_table(slurm_lab), cpus_per_gpu=1) == [], allocs
    finally:
        slurm_lab.cancel(blocker, *([job] if job else []))


@pytest.mark.parametrize("held", [False, True], ids=["idle", "cores-held"])
def test_issue5_shape_eight_tasks_of_two_cpus(slurm_lab, held):
    """``--ntasks=8 -c 2`` with 8 GPUs and srun inside: plain sbatch gets cores 0-15, all on socket 0
    (test_gpusub_lab.py::test_plain_sbatch_fails_the_rule); gpusub's --ntasks-per-socket=4 gives each
    socket 4 tasks, so GPUs 4-7 get local cores too, also with 8 cores of socket 0 held."""
    work = slurm_lab.workdir("issue5")
    path = os.path.join(work, "train.sh")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("#!/bin/bash\n#SBATCH --gres=gpu:h100:8\n#SBATCH --ntasks=8\n#SBATCH --cpus-per-task=2\n"
                 "#SBATCH --time=10\nsrun sleep 120\n")
    assert "--ntasks-per-socket=4" in explain(slurm_lab, [path], work)["binding"]["sbatch_options"]
    blocker = hold_cores(slurm_lab, "h100n2") if held else None
    job = None
    try:
        job = submit(slurm_lab, ["-w", "h100n2", path], work)
        allocs = running_detail(slurm_lab, job)
        assert_as_asked(slurm_lab, job, allocs, 8, 8, 16)
        assert check_job(allocs, gres_table(slurm_lab), cpus_per_gpu=1) == [], allocs
    finally:
        slurm_lab.cancel(*[j for j in (blocker, job) if j])


@pytest.mark.parametrize("gtype, gpus, form", WARNED, ids=[f"{t}x{n}-{f}" for t, n, f in WARNED])
def test_one_task_few_cpus_two_sockets_is_warned_and_runs_as_asked(slurm_lab, gtype, gpus, form):
    work, path, tasks, cpus = write_job(slurm_lab, gtype, gpus, form)
    plan = explain(slurm_lab, [path], work)
    assert any(ONE_SOCKET_WARNING in w for w in plan["warnings"]), plan["warnings"]
    job = submit(slurm_lab, [path], work)
    try:
        allocs = running_detail(slurm_lab, job)
        assert_as_asked(slurm_lab, job, allocs, gpus, tasks, cpus)
        # the warning is true: the GPUs of one socket have none of the job's cores
        assert any("have 0 local cores" in p for p in check_job(allocs, gres_table(slurm_lab), cpus_per_gpu=1)), allocs
    finally:
        slurm_lab.cancel(job)
