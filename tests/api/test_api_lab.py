# SPDX-License-Identifier: Apache-2.0
"""The Python API against the real Slurm lab (marker ``slurm``). Each test runs a small driver as the lab
user (the folder's owner checks are the user's, as on a cluster): it imports slurm_gpu.api, submits
through gpusub's prepare step and the Slurm adapter, and prints its findings as one JSON line.

- a function returning a value; a function raising, with its traceback in job.exception();
- the job of the API and the job of `gpusub --dry-run` for the same command line are one script, byte
  for byte;
- one squeue call per poll interval whatever the number of jobs (a counting wrapper around the real
  runner: the calls are real);
- map_array over more items than an array may hold (the executor's max_array_size set to a small
  value, so the lab stays light; SLURM_GPU_API_ARRAY_ITEMS and SLURM_GPU_API_MAX_ARRAY set the
  acceptance's 5,000 over 1,001), results in input order; the cluster's real MaxArraySize is read;
- a checkpointable callable in the spot partition preempted twice by batch jobs, resuming to the exact
  result;
- a 2-node 8-task job (h100n1, h100n2) with per-task GPUs and the rank environment, checked against the
  allocation;
- an allocation running 3 steps.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

pytestmark = pytest.mark.slurm

HERE = os.path.dirname(os.path.abspath(__file__))
VENV_BIN = os.path.dirname(sys.executable)

HEADER = """import json, os, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slurm_gpu.api import Command, Executor, FailedJobError, wait_all
import api_tasks
work = os.path.dirname(os.path.abspath(__file__))
ex = Executor(os.path.join(work, "jobs"), poll_interval_s=1.0, max_poll_interval_s=4.0)
out = {}
"""


def drive(slurm_lab, body: str, timeout_s: float = 300) -> dict:
    work = slurm_lab.workdir("api")
    shutil.copy(os.path.join(HERE, "api_tasks.py"), os.path.join(work, "api_tasks.py"))
    with open(os.path.join(work, "drv.py"), "w", encoding="utf-8") as fh:
        fh.write(HEADER + body + "\nprint('RESULT ' + json.dumps(out), flush=True)\n")
    shutil.chown(os.path.join(work, "drv.py"), slurm_lab.user)
    done = slurm_lab.run([sys.executable, "drv.py"], cwd=work, timeout_s=timeout_s,
                         env_extra={"PATH": f"{VENV_BIN}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": work,
                                    "GPUSUB_TIMEOUT_S": "60"})  # sbatch under the shared machine's load
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    assert done.returncode == 0 and lines, f"driver failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return dict(json.loads(lines[-1][7:]), _work=work)


def test_a_function_returning_a_value_and_one_raising_with_its_traceback(slurm_lab) -> None:
    out = drive(slurm_lab, """
ex.update_parameters(timeout_min=5, gpus=1, gpu_type="h100")
ok, bad = ex.submit(api_tasks.add, 2, 3), ex.submit(api_tasks.boom)
wait_all([ok, bad])
out["value"], out["state"], out["stdout"] = ok.result(), ok.state, ok.stdout()
exc = bad.exception()
out["exc"] = [type(exc).__name__, type(exc.original).__name__, exc.remote_traceback, bad.state, exc.outcome]
""")
    assert out["value"] == 5 and out["state"] == "COMPLETED" and "adding 2 3" in out["stdout"]
    name, original, tb, state, outcome = out["exc"]
    assert (name, original, state, outcome) == ("FailedJobError", "ValueError", "FAILED", "failed")
    assert 'raise ValueError("boom from the job")' in tb and "api_tasks.py" in tb


def test_the_api_job_is_the_gpusub_job_byte_for_byte(slurm_lab) -> None:
    out = drive(slurm_lab, """
ex.update_parameters(timeout_min=5, gpus=2, gpu_type="h100", cpus_per_task=2, checkpoint=True)
job = ex.submit(api_tasks.add, 1, 2)
dry = subprocess.run(["gpusub", "--dry-run", *job.gpusub_argv], capture_output=True, text=True, env=ex.env)
out["argv"], out["api"], out["gpusub"], out["rc"] = job.gpusub_argv, job.script, dry.stdout, dry.returncode
out["value"] = job.result()
""")
    assert out["rc"] == 0 and out["value"] == 3
    assert "--checkpoint" in out["argv"] and "--gpus=h100:2" in out["argv"]
    assert out["api"].encode() == out["gpusub"].encode()
    assert "gpusub_ckpt_signal=" in out["api"] and "-m slurm_gpu.api " in out["api"]


def test_one_squeue_call_per_interval_whatever_the_number_of_jobs(slurm_lab) -> None:
    out = drive(slurm_lab, """
from slurm_gpu.adapters.slurm.runner import run_slurm
from slurm_gpu.api.poller import Poller
ex.update_parameters(timeout_min=5)
for n in (1, 12):
    poller = Poller(ex.env, runner=run_slurm, interval_s=1.0, max_interval_s=1.0)
    ex.poller = poller
    jobs = ex.map_array(api_tasks.square, range(n))
    start = time.monotonic()
    wait_all(jobs, progress=False, timeout_s=240)
    out[str(n)] = [time.monotonic() - start, dict(poller.calls), [j.result() for j in jobs]]
""", timeout_s=600)
    for n in ("1", "12"):
        elapsed, calls, results = out[n]
        assert results == [x * x for x in range(int(n))]
        # at most one squeue per 1 s interval (+1: the first poll at once), sacct only for jobs gone
        assert 1 <= calls["squeue"] <= elapsed / 1.0 + 1, (n, calls, elapsed)
        assert calls.get("sacct", 0) <= 1, calls


def test_map_array_splits_above_max_array_size_with_results_in_order(slurm_lab) -> None:
    items = int(os.environ.get("SLURM_GPU_API_ARRAY_ITEMS", "45"))
    limit = int(os.environ.get("SLURM_GPU_API_MAX_ARRAY", "20"))
    out = drive(slurm_lab, f"""
out["cluster_max"] = ex.max_array_size()
ex.update_parameters(timeout_min=5, max_array_size={limit}, array_parallelism=8)
jobs = ex.map_array(api_tasks.square, range({items}))
wait_all(jobs, timeout_s=3000)
out["results"] = [j.result() for j in jobs]
out["arrays"] = sorted({{j.job_id.split("_")[0] for j in jobs}})
out["specs"] = sorted({{a.split("=", 1)[1] for j in jobs for a in j.gpusub_argv if a.startswith("--array=")}})
out["sbatch"] = ex.sbatch_calls
""", timeout_s=3600)
    assert out["cluster_max"] == 1001  # the lab's slurm.conf sets none: Slurm's default MaxArraySize
    assert out["results"] == [x * x for x in range(items)]
    arrays = -(-items // limit)
    assert len(out["arrays"]) == arrays == out["sbatch"]
    assert f"0-{limit - 1}%8" in out["specs"]


def test_batch_and_max_submit_split_into_arrays(slurm_lab) -> None:
    out = drive(slurm_lab, """
ex.update_parameters(timeout_min=5, max_submit=10)
with ex.batch():
    early = [ex.submit(api_tasks.square, x) for x in range(3)]
out["batch"] = [j.result() for j in early]
out["batch_arrays"] = sorted({j.job_id.split("_")[0] for j in early})
jobs = ex.map_array(api_tasks.square, range(25))  # MaxSubmitJobs 10: arrays of 10, each once there is room
wait_all(jobs, progress=False, timeout_s=600)
out["results"] = [j.result() for j in jobs]
out["arrays"] = sorted({j.job_id.split("_")[0] for j in jobs})
""", timeout_s=900)
    assert out["batch"] == [0, 1, 4] and len(out["batch_arrays"]) == 1
    assert out["results"] == [x * x for x in range(25)] and len(out["arrays"]) == 3


def test_a_checkpointable_callable_preempted_twice_resumes_to_the_exact_result(slurm_lab) -> None:
    out = drive(slurm_lab, """
ex.update_parameters(cls="spot", gres="gpu:a100:4", nodelist="a100n1", timeout_min=10, checkpoint=True)
job = ex.submit(api_tasks.Count(400, 0.1))
preemptors = []
for k in range(2):
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:  # run k is up and has counted a little
        log = job.stdout() or ""
        if log.count("start restart=") == k + 1 and log.rstrip().split("\\n")[-1].startswith("at "):
            break
        time.sleep(0.5)
    time.sleep(2)
    p = subprocess.run(["sbatch", "--parsable", "-p", "batch", "--qos=normal", "--gres=gpu:a100:4", "-w", "a100n1",
                        "-t", "1", "-o", "/dev/null", "--wrap", "sleep 1"], capture_output=True, text=True, env=ex.env)
    preemptors.append(p.stdout.strip() or p.stderr)
    while job.state == "RUNNING" and job.restarts == k:
        time.sleep(0.5)
out["result"], out["state"], out["restarts"] = job.result(), job.state, job.restarts
out["preemptors"], out["log"] = preemptors, job.stdout()
""", timeout_s=900)
    result = out["result"]
    assert out["state"] == "COMPLETED" and result["at"] == 400, out
    restarts = [r for r, _ in result["starts"]]
    # 22.05 leaves a job that ends within the grace time COMPLETED, so every rerun is the script's own
    # requeue; 24.11 also requeues it itself, which may count a restart more (tests/checkpoint's R4 notes)
    assert out["restarts"] >= 2 and len(restarts) >= 3 and restarts[0] == 0 and restarts == sorted(set(restarts)), out
    if slurm_lab.version < (24, 11, 0):
        assert restarts == [0, 1, 2], out
    at = [a for _, a in result["starts"]]
    assert at[0] == 0 and at == sorted(at) and at[1] > 0, out
    for start, chunk in zip(at[1:], out["log"].split("start restart=")[1:-1], strict=False):
        assert f"at {start}\n" in chunk and f"at {start + 1}\n" not in chunk, out["log"]  # none redone, none skipped


def test_two_nodes_eight_tasks_with_per_task_gpus_and_the_rank_environment(slurm_lab) -> None:
    out = drive(slurm_lab, """
ranks = os.path.join(work, "ranks")
os.makedirs(ranks)
ex.update_parameters(nodes=2, tasks_per_node=4, gpus_per_node=4, gpu_type="h100", launch="per-gpu", timeout_min=5)
job = ex.submit(api_tasks.rank_info, ranks)
out["rank0"] = job.result()
out["ranks"] = [json.load(open(os.path.join(ranks, f"rank-{r}.json"))) for r in range(8)]
d = subprocess.run(["scontrol", "show", "job", "-d", job.job_id], capture_output=True, text=True, env=ex.env)
out["detail"] = d.stdout
""")
    ranks = out["ranks"]
    assert [r["RANK"] for r in ranks] == [str(k) for k in range(8)] and {r["WORLD_SIZE"] for r in ranks} == {"8"}
    hosts = sorted({r["host"] for r in ranks})
    assert len(hosts) == 2
    first = ranks[0]["host"]
    assert {(r["MASTER_ADDR"], r["MASTER_PORT"]) for r in ranks} == {(first, ranks[0]["MASTER_PORT"])}
    import re

    alloc = {m.group(1): m.group(2) for m in re.finditer(r"Nodes=(\S+) .*?GRES=gpu:h100:4\(IDX:([0-9,-]+)\)",
                                                          out["detail"])}
    for host in hosts:
        mine = [r for r in ranks if r["host"] == host]
        assert sorted(r["LOCAL_RANK"] for r in mine) == ["0", "1", "2", "3"]
        own = [r["CUDA_VISIBLE_DEVICES"].split(",")[int(r["LOCAL_RANK"])] for r in mine]
        assert len(set(own)) == 4, mine  # entry LOCAL_RANK of its order: every task its own GPU
        job_gpus = {g for r in mine for g in (r["SLURM_JOB_GPUS"] or "").split(",") if g}
        assert len(job_gpus) == 4 and set(own) <= job_gpus, mine  # the node's 4 allocated GPUs
        if host in alloc:  # scontrol -d names the indices where the node's gres has them
            from slurm_gpu.cpulist import parse_cpulist

            assert job_gpus == {str(i) for i in parse_cpulist(alloc[host])}


def test_an_allocation_running_three_steps(slurm_lab) -> None:
    out = drive(slurm_lab, """
ranks = os.path.join(work, "steps")
ex.update_parameters(timeout_min=5, gpus=1, gpu_type="h100")
with ex.allocation() as alloc:
    steps = [alloc.submit(api_tasks.add, k, k) for k in range(3)]
    out["values"] = [s.result() for s in steps]
    out["alloc"] = alloc.job_id
    out["ids"] = [s.job_id for s in steps]
""")
    assert out["values"] == [0, 2, 4]
    assert all(i.startswith(out["alloc"] + ".") for i in out["ids"])


def test_a_failed_squeue_keeps_the_last_states_and_the_poll_goes_on(slurm_lab) -> None:
    out = drive(slurm_lab, """
from slurm_gpu.adapters.slurm.runner import run_slurm
from slurm_gpu.api.poller import Poller
failing = [2]
def runner(argv, **kw):  # the real squeue, refusing an unknown option the first two times
    if argv[0] == "squeue" and failing[0] > 0:
        failing[0] -= 1
        argv = ["squeue", "--no-such-option"]
    return run_slurm(argv, **kw)
ex.poller = Poller(ex.env, runner=runner, interval_s=0.5, max_interval_s=1.0, max_failures=3)
ex.update_parameters(timeout_min=5)
job = ex.submit(api_tasks.add, 20, 22)
out["value"], out["failures"], out["calls"] = job.result(), ex.poller.failures, dict(ex.poller.calls)
""")
    assert out["value"] == 42 and out["failures"] == 0 and out["calls"]["squeue"] >= 3
