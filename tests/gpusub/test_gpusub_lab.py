# SPDX-License-Identifier: Apache-2.0
"""gpusub against the real Slurm lab: the job runs once with the shape it asked for, per-task binding
with the opt-in ``--launch=per-gpu``, --test-only, --wait, --json, multi-node and fragmented-GPU
locality. Integration tests (marker ``slurm``); the locality acceptance of every job size and shape
is in test_locality_lab.py."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from slurm_gpu.placement.locality import NodeAlloc, check_job, parse_gres_conf
from slurm_gpu.slurm.release import BATCH_STEP_ID_ENV, PLAIN_SPREADS_TASKS_OVER_SOCKETS, since

pytestmark = pytest.mark.slurm

SLEEP = "#!/bin/bash\n#SBATCH --time=5\nsleep 120\n"


def gres_table(lab):
    with open(os.path.join(os.path.dirname(lab.slurm_conf), "gres.conf"), encoding="utf-8") as fh:
        return parse_gres_conf(fh.read())


def write(workdir: str, name: str, text: str) -> str:
    path = os.path.join(workdir, name)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(path, 0o755)
    return path


def gpusub(lab, args, cwd, env_extra=None, timeout_s=60) -> subprocess.CompletedProcess[str]:
    """This checkout's gpusub, run as the lab user (as researchers run it)."""
    from slurm_gpu.lab.demo import find_gpusub

    return lab.run([find_gpusub(), *args], cwd=cwd, env_extra=env_extra, timeout_s=timeout_s)


def detail(lab, job_id) -> list[NodeAlloc]:
    """The job's per-node allocations (the lab helper's job reader: squeue's JSON)."""
    return lab.show_job(job_id)[1]


def submit_json(lab, args, cwd, env_extra=None) -> dict:
    r = gpusub(lab, ["--json", *args], cwd, env_extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_plain_sbatch_fails_the_rule(slurm_lab):
    """The baseline of issue 5: 8 tasks x 2 cpus with 8 GPUs gets all 16 cores on socket 0 (22.05.8, 24.11.5).
    26.05.5's plain sbatch spreads them over both sockets (slurm.release.PLAIN_SPREADS_TASKS_OVER_SOCKETS,
    measured), so there the rule holds without gpusub. (gpusub jobs of every size and shape:
    tests/gpusub/test_locality_lab.py.)"""
    work = slurm_lab.workdir("plain")
    job = slurm_lab.sbatch(["--gres=gpu:h100:8", "--ntasks=8", "--cpus-per-task=2", "--mem-per-gpu=8G", "-t", "5",
                            "--wrap", "sleep 120"], cwd=work)
    try:
        assert slurm_lab.wait(job, {"RUNNING"}, timeout_s=120) == "RUNNING"
        problems = check_job(detail(slurm_lab, job), gres_table(slurm_lab), cpus_per_gpu=1)
        if since(PLAIN_SPREADS_TASKS_OVER_SOCKETS, slurm_lab.version):
            assert problems == [], problems
        else:
            assert any("have 0 local cores" in p for p in problems), problems
    finally:
        slurm_lab.cancel(job)


PROBE = r"""#!/bin/bash
echo "task=$SLURM_LOCALID rank=$LOCAL_RANK cvd=$CUDA_VISIBLE_DEVICES" \
  "gpus=${SLURM_STEP_GPUS:-$SLURM_JOB_GPUS} bind=$SLURM_CPU_BIND dist=$SLURM_DISTRIBUTION omp=$OMP_NUM_THREADS"
"""


def lab_task_plugin(lab) -> str:
    """TaskPlugin of the running lab's slurm.conf (task/affinity on 22.05, task/none on 24.11)."""
    with open(os.path.join(lab.paths.conf_dir, "slurm.conf"), encoding="utf-8") as fh:
        found = re.findall(r"^TaskPlugin=(\S+)", fh.read(), re.M)
    assert len(found) == 1, found
    return found[0]


def run_probe(lab, args, env_extra=None):
    """The opt-in old behaviour: one task per GPU through srun (``--launch=per-gpu``)."""
    work = lab.workdir("bind")
    script = write(work, "probe.sh", PROBE)
    out = os.path.join(work, "out.txt")
    job = submit_json(lab, ["--launch=per-gpu", *args, "--mem-per-gpu=8G", "-o", out, script], work, env_extra)
    assert lab.wait(job["job_id"], timeout_s=120) == "COMPLETED"
    with open(os.path.join(work, "out.txt"), encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    tasks = {}
    for line in lines:
        if line.startswith("task="):
            fields = dict(w.split("=", 1) for w in line.split())
            tasks[int(fields["task"])] = fields
    return job, tasks, lines


def test_per_task_binding_two_h100(slurm_lab):
    """--launch=per-gpu: srun --cpu-bind=verbose,cores reports one core mask per task; each task sees the
    job's GPUs with its own first (LOCAL_RANK -> CUDA_VISIBLE_DEVICES entry), OMP_NUM_THREADS = cores per task."""
    job, tasks, lines = run_probe(slurm_lab, ["--gres=gpu:h100:2"], {"GPUSUB_CPU_BIND": "verbose,cores"})
    assert sorted(tasks) == [0, 1]
    # Slurm's own report, one line per task: "cpu-bind=MASK - h100n1, task  0  0 [15795]: mask 0x1 set"
    reports = [ln for ln in lines if ln.startswith("cpu-bind") and "=MASK - " in ln and " task " in ln]
    if lab_task_plugin(slurm_lab) == "task/none":
        # the lab's task/none (docs/lab.md "Few real CPUs"): nobody binds, so Slurm prints no mask report
        # and SLURM_CPU_BIND carries the request (22.05.8 writes it twice: "verbose,coresverbose,cores",
        # measured with a plain sbatch job and `srun --cpu-bind=verbose,cores` too)
        assert reports == [], lines
        assert all(t["bind"].endswith("verbose,cores") for t in tasks.values()), tasks
    else:
        assert len(reports) == 2, lines
        assert len({ln.split(": mask ")[1] for ln in reports}) == 2  # a distinct core mask per task
        assert all(t["bind"].startswith("verbose,") and "mask_cpu:" in t["bind"] for t in tasks.values()), tasks
    for rank, t in tasks.items():
        assert t["rank"] == str(rank) and t["omp"] == "4" and t["dist"] == "block:block"
        # both GPUs sit on one socket: the order is the index order, every task sees both (shared)
        assert t["cvd"] == t["gpus"] and len(t["gpus"].split(",")) == 2


def test_per_task_gpu_order_a100_follows_sockets(slurm_lab):
    """--launch=per-gpu on a100x4: GPUs 2,3 sit on socket 0. With block:block tasks 0,1 get socket-0 cores, so their
    CUDA_VISIBLE_DEVICES entry LOCAL_RANK must be GPU 2 and 3. (The lab's task/affinity cannot lay out
    more tasks than its 2 real CPUs with --cpu-bind=cores, hence plain verbose binding here.)"""
    job, tasks, _ = run_probe(slurm_lab, ["--gres=gpu:a100:4"], {"GPUSUB_CPU_BIND": "verbose"})
    assert sorted(tasks) == [0, 1, 2, 3]
    for rank, t in tasks.items():
        order = t["cvd"].split(",")
        assert order == ["2", "3", "0", "1"], t  # no cgroups in the lab: CVD holds global ids
        assert order[rank] == ["2", "3", "0", "1"][rank]


def test_test_only_passes_through(slurm_lab):
    work = slurm_lab.workdir("testonly")
    script = write(work, "sleep.sh", SLEEP)
    r = gpusub(slurm_lab, ["--test-only", "--json", "--gres=gpu:h100:2", script], work)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["job_id"] > 0 and data["partition"] and data["nodes"]


def test_wait_exits_with_the_jobs_exit_code(slurm_lab):
    work = slurm_lab.workdir("wait")
    script = write(work, "exit3.sh", "#!/bin/bash\n#SBATCH --time=2\nexit 3\n")
    r = gpusub(slurm_lab, ["--wait", script], work, timeout_s=120)
    assert r.returncode == 3, r.stderr
    assert "COMPLETED" not in r.stderr and "FAILED" in r.stderr and "exit code 3" in r.stderr


def test_json_submission_record(slurm_lab):
    work = slurm_lab.workdir("json")
    script = write(work, "sleep.sh", SLEEP)
    job = submit_json(slurm_lab, ["--gres=gpu:h100:2", script, "arg one"], work)
    try:
        assert set(job) >= {"job_id", "partition", "qos", "gres", "binding", "warnings"}
        assert job["gres"] == "gpu:h100:2" and job["binding"]["launch"] == "batch"
        rec = slurm_lab.show_job(job["job_id"])[0]
        assert rec["Partition"] == job["partition"] and rec["QOS"] == job["qos"]
    finally:
        slurm_lab.cancel(job["job_id"])


def test_default_job_runs_once_with_its_own_shape(slurm_lab):
    """Issue 8: gpusub adds no tasks and no srun: a 2-GPU script without task options runs once, in
    the batch step, with what plain sbatch gives the same script (tasks, CPUs, GPUs, environment)."""
    work = slurm_lab.workdir("once")
    script = write(work, "once.sh", "#!/bin/bash\n#SBATCH --gres=gpu:h100:2\n#SBATCH --time=5\n"
                   'echo "ran step=${SLURM_STEP_ID:-none} ntasks=${SLURM_NTASKS:-unset} '
                   'cpus=$SLURM_CPUS_ON_NODE gpus=${SLURM_JOB_GPUS//[0-9]/N}"\n')
    seen = {}
    for way in ("plain", "gpusub"):
        out = os.path.join(work, f"{way}.txt")
        if way == "plain":
            job_id = slurm_lab.sbatch(["-o", out, script], cwd=work)
        else:
            job_id = submit_json(slurm_lab, ["-o", out, script], work)["job_id"]
        assert slurm_lab.wait(job_id, timeout_s=120) == "COMPLETED"
        rec = slurm_lab.show_job(job_id)[0]
        with open(out, encoding="utf-8") as fh:
            ran = [ln for ln in fh.read().splitlines() if ln.startswith("ran ")]
        seen[way] = (rec["NumTasks"], rec["NumCPUs"], ran)
    assert seen["gpusub"] == seen["plain"], seen
    step = since(BATCH_STEP_ID_ENV, slurm_lab.version) or "none"  # the batch step: unset, -5 from 26.05
    assert seen["gpusub"][0] == "1" and seen["gpusub"][2] == [f"ran step={step} ntasks=unset cpus=8 gpus=N,N"], seen


def test_two_node_job_meets_the_rule_on_each_node(slurm_lab):
    """``-N2 --gres=gpu:h100:2``: one task per node (sbatch's shape), two GPUs and their cores on each."""
    work = slurm_lab.workdir("multi")
    script = write(work, "train.sh", "#!/bin/bash\n#SBATCH -N2\n#SBATCH --gres=gpu:h100:2\n#SBATCH --time=5\n"
                   "srun sleep 120\n")
    job = submit_json(slurm_lab, [script], work)
    try:
        assert job["binding"]["nodes"] == 2 and job["binding"]["tasks"] == 2
        assert slurm_lab.wait(job["job_id"], {"RUNNING"}, timeout_s=120) == "RUNNING"
        allocs = detail(slurm_lab, job["job_id"])
        assert len({a.node for a in allocs}) == 2 and all(len(a.gpu_idx) == 2 for a in allocs)
        assert slurm_lab.show_job(job["job_id"])[0]["NumTasks"] == "2"
        assert check_job(allocs, gres_table(slurm_lab), cpus_per_gpu=1) == [], allocs
    finally:
        slurm_lab.cancel(job["job_id"])


def test_locality_holds_when_some_gpus_are_busy(slurm_lab):
    """Two 1-GPU jobs hold GPUs of h100n2 first: a 4-GPU gpusub job (one task, the partition's
    DefCpuPerGPU) still gets a local core for each of the GPUs it is given."""
    work = slurm_lab.workdir("frag")
    blockers = [slurm_lab.sbatch(["-w", "h100n2", "--gres=gpu:h100:1", "-n1", "-c1", "--mem=1G", "-t", "2",
                                  "--wrap", "sleep 30"], cwd=work, as_root=True) for _ in range(2)]
    script = write(work, "sleep.sh", SLEEP)
    job = submit_json(slurm_lab, ["-w", "h100n2", "--gres=gpu:h100:4", script], work)
    try:
        assert slurm_lab.wait(job["job_id"], {"RUNNING"}, timeout_s=120) == "RUNNING"
        allocs = detail(slurm_lab, job["job_id"])
        assert check_job(allocs, gres_table(slurm_lab), cpus_per_gpu=1) == [], allocs
    finally:
        slurm_lab.cancel(job["job_id"], *blockers)


def test_prints_what_sbatch_prints(slurm_lab):
    """stdout as sbatch's (`Submitted batch job N`, the id with --parsable, nothing with --quiet), and
    sbatch's own warnings reach stderr."""
    work = slurm_lab.workdir("prints")
    jobs = []
    try:
        r = slurm_lab.gpusub(["-N", "2", "-n", "1", "-t", "1", "--hold", "--wrap", "hostname"], cwd=work)
        assert r.returncode == 0, r.stderr
        assert re.fullmatch(r"Submitted batch job \d+\n", r.stdout), r.stdout
        assert "can't run 1 processes on 2 nodes" in r.stderr  # sbatch's warning, passed on
        jobs.append(r.stdout.split()[-1])
        r = slurm_lab.gpusub(["--parsable", "-t", "1", "--hold", "--wrap", "hostname"], cwd=work)
        assert re.fullmatch(r"\d+(;\S+)?\n", r.stdout), r.stdout
        jobs.append(r.stdout.strip().split(";")[0])
        r = slurm_lab.gpusub(["--quiet", "-t", "1", "--hold", "--wrap", "hostname"], cwd=work)
        assert r.returncode == 0 and r.stdout == "", r.stdout
    finally:
        if jobs:
            slurm_lab.cancel(*jobs)
