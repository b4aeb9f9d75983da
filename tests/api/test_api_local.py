# SPDX-License-Identifier: Apache-2.0
"""The Python API without Slurm: the pure parts (states, arrays, parameters), the folder's security, and
the acceptance tests through LocalExecutor (subprocesses, the same worker and environment contract)
and DebugExecutor (in process)."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from slurm_gpu.adapters.fs import Untrusted
from slurm_gpu.api import Command, DebugExecutor, FailedJobError, LocalExecutor, RequeueCommand, wait_all
from slurm_gpu.api.arrays import plan_arrays, read_max_array_size, read_max_submit
from slurm_gpu.api.executor import parameter_options
from slurm_gpu.api.folder import Folder
from slurm_gpu.api.states import parse_sacct, parse_squeue
from slurm_gpu.errors import UsageError
from tests.api import api_tasks

# ---- pure -------------------------------------------------------------------------------------

def test_squeue_states_and_outcomes_come_from_slurm() -> None:
    text = ("7|RUNNING|None|0|0:0|N/A|0|\n7_3|PENDING|JobArrayTaskLimit|0|0:0|N/A|0|\n"
            "8|TIMEOUT|TimeLimit|0|0:15|N/A|0|\n"
            "9|PREEMPTED|None|1|0:15|2026-12-02T06:00:00|0|\n10|OUT_OF_MEMORY|OutOfMemory|0|0:125|N/A|0|\n"
            "11|NODE_FAIL|NodeDown|0|0:0|N/A|0|\n12_[4-9%2]|PENDING|JobArrayTaskLimit|0|0:0|N/A|0|\n"
            "14|PREEMPTED|None|0|0:15|2026-12-02T06:00:00|1|\n")
    jobs = parse_squeue(text)
    assert set(jobs) == {"7", "7_3", "8", "9", "10", "11", "14"}  # the collapsed pending range is no job
    assert [jobs[j].outcome for j in ("7", "8", "9", "10", "11")] == [None, "timeout", "preempted", "oom", "node_fail"]
    assert not jobs["14"].finished  # preempted but requeueable: Slurm brings it back
    assert jobs["9"].restarts == 1 and jobs["9"].preempted_at == "2026-12-02T06:00:00"
    acct = parse_sacct("12_0|COMPLETED|0:0|None\n12_1|CANCELLED by 1001|0:15|None\n13|FAILED|1:0|OutOfMemory\n")
    assert [acct[j].outcome for j in ("12_0", "12_1", "13")] == ["completed", "cancelled", "oom"]


def test_arrays_split_at_max_array_size_and_max_submit() -> None:
    chunks = plan_arrays(5000, 1001)
    assert [c.count for c in chunks] == [1001, 1001, 1001, 1001, 996]
    assert [c.start for c in chunks] == [0, 1001, 2002, 3003, 4004] and chunks[0].spec == "0-1000"
    assert [c.count for c in plan_arrays(10, 1001, max_submit=4, throttle=2)] == [4, 4, 2]
    assert plan_arrays(10, 1001, 4, 2)[0].spec == "0-3%2"
    assert read_max_array_size("MaxArraySize            = 1001\nMaxJobCount = 10000\n") == 1001
    assert read_max_submit("normal|50|\nspot||20\n", "spot") == 20
    assert read_max_submit("normal|||\n", "normal") is None


def test_parameters_map_to_gpusub_options() -> None:
    opts = parameter_options({"timeout_min": 5, "gpus": 2, "gpu_type": "h100", "cls": "spot", "checkpoint": True,
                              "mem_gb": 8, "additional_parameters": {"gres_flags": "enforce-binding"}})
    assert opts == ["--time=5", "--mem=8G", "--class=spot", "--checkpoint", "--gpus=h100:2",
                    "--gres-flags=enforce-binding"]
    ex = LocalExecutor.__new__(LocalExecutor)
    ex.parameters = {}
    with pytest.raises(UsageError, match="unknown parameter 'gpu_count'"):
        ex.update_parameters(gpu_count=1)


# ---- the folder -------------------------------------------------------------------------------

def test_folder_is_private_and_refuses_symlinks_and_foreign_results(tmp_path) -> None:
    folder = Folder(tmp_path / "f")
    assert oct(os.stat(folder.path).st_mode & 0o777) == "0o700"
    os.symlink(tmp_path / "f", tmp_path / "link")
    with pytest.raises(Untrusted):
        Folder(tmp_path / "link")  # the folder itself may not be a symlink
    folder.write_obj("a.result.pkl", ("ok", 1))
    assert folder.load("a.result.pkl") == ("ok", 1)
    assert oct(os.stat(folder.file("a.result.pkl")).st_mode & 0o777) == "0o600"
    os.chmod(folder.file("a.result.pkl"), 0o620)  # writable by the group: not loaded
    with pytest.raises(Untrusted):
        folder.load("a.result.pkl")
    os.chmod(folder.file("a.result.pkl"), 0o600)
    os.symlink(folder.file("a.result.pkl"), folder.file("b.result.pkl"))
    with pytest.raises(OSError):
        folder.load("b.result.pkl")  # never through a symlink
    if os.geteuid() == 0:
        os.chown(folder.file("a.result.pkl"), 1001, 1001)
        with pytest.raises(Untrusted):
            folder.load("a.result.pkl")  # not the caller's own file
    wider = tmp_path / "wide"
    wider.mkdir(mode=0o755)
    os.chmod(wider, 0o755)
    Folder(wider)
    assert oct(os.stat(wider).st_mode & 0o777) == "0o700"


# ---- DebugExecutor and LocalExecutor: the acceptance tests but multi-node -------------------------

@pytest.fixture(params=["local", "debug"])
def executor(request, tmp_path):
    return (LocalExecutor if request.param == "local" else DebugExecutor)(tmp_path / "jobs")


def test_a_function_returning_a_value(executor) -> None:
    job = executor.submit(api_tasks.add, 2, 3)
    assert job.result() == 5 and job.state == "COMPLETED" and job.done()
    if isinstance(executor, LocalExecutor) and not isinstance(executor, DebugExecutor):
        assert "adding 2 3" in (job.stdout() or "")


def test_a_function_raising_with_its_traceback(executor) -> None:
    job = executor.submit(api_tasks.boom)
    exc = job.exception()
    assert isinstance(exc, FailedJobError) and isinstance(exc.original, ValueError)
    assert 'raise ValueError("boom from the job")' in exc.remote_traceback
    assert "api_tasks.py" in exc.remote_traceback
    with pytest.raises(FailedJobError, match="boom from the job"):
        job.result()


def test_a_command(executor) -> None:
    assert executor.submit(Command(["echo", "hello"])).result() == "hello\n"


def test_map_array_keeps_the_input_order(tmp_path) -> None:
    ex = LocalExecutor(tmp_path / "jobs", max_parallel=2)
    jobs = ex.map_array(api_tasks.square, range(30))
    wait_all(jobs, progress=False, timeout_s=120)
    assert [j.result() for j in jobs] == [x * x for x in range(30)]


def _wait_for(pred, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_checkpointable_callable_preempted_twice_resumes_to_the_exact_result(tmp_path) -> None:
    ex = LocalExecutor(tmp_path / "jobs")
    ex.update_parameters(checkpoint=True, max_requeues=3)
    job = ex.submit(api_tasks.Count(60, 0.05))
    for k in range(2):  # two preemptions, each once this run has counted a little
        _wait_for(lambda k=k: (job.stdout() or "").count("start restart=") == k + 1
                  and (job.stdout() or "").rstrip().endswith(tuple(f"at {n}" for n in range(1, 61))))
        time.sleep(0.3)
        ex.preempt(job)
    result = job.result()
    assert result["at"] == 60 and job.state == "COMPLETED" and job.restarts == 2
    starts = result["starts"]
    assert [r for r, _ in starts] == [0, 1, 2] and starts[0][1] == 0 and 0 < starts[1][1] < starts[2][1] < 60
    log = job.stdout() or ""
    for (_, at_start), chunk in zip(starts[1:], log.split("start restart=")[1:-1], strict=True):
        assert f"at {at_start}\n" in chunk and f"at {at_start + 1}\n" not in chunk  # no step redone or skipped


def test_preempted_with_no_restart_left_is_reported_as_preempted(tmp_path) -> None:
    ex = LocalExecutor(tmp_path / "jobs")
    ex.update_parameters(checkpoint=True, max_requeues=0)
    job = ex.submit(api_tasks.Count(10_000, 0.05))
    _wait_for(lambda: "at 2\n" in (job.stdout() or ""))
    ex.preempt(job)
    exc = job.exception()
    assert job.state == "PREEMPTED" and job.outcome == "preempted"
    assert isinstance(exc, FailedJobError) and exc.outcome == "preempted"


def test_tasks_per_node_get_the_rank_environment_and_their_own_gpu(tmp_path) -> None:
    ex = LocalExecutor(tmp_path / "jobs")
    ex.update_parameters(tasks_per_node=4, visible_gpus=[3, 2, 1, 0])
    out = tmp_path / "ranks"
    out.mkdir()
    job = ex.submit(api_tasks.rank_info, str(out))
    assert job.result()["RANK"] == "0"
    ranks = [json.loads((out / f"rank-{r}.json").read_text()) for r in range(4)]
    assert [(r["RANK"], r["LOCAL_RANK"], r["WORLD_SIZE"]) for r in ranks] == [(str(k), str(k), "4") for k in range(4)]
    assert [r["CUDA_VISIBLE_DEVICES"] for r in ranks] == ["3", "2", "1", "0"]
    assert len({(r["MASTER_ADDR"], r["MASTER_PORT"]) for r in ranks}) == 1


def test_cancel_ends_a_local_job(tmp_path) -> None:
    ex = LocalExecutor(tmp_path / "jobs")
    job = ex.submit(api_tasks.Count(10_000, 0.05))
    _wait_for(lambda: "at 1\n" in (job.stdout() or ""))
    job.cancel()
    job.wait(timeout_s=30)
    assert job.state == "CANCELLED"
    _ = signal.SIGUSR2


def test_an_allocation_running_three_steps(tmp_path) -> None:
    ex = LocalExecutor(tmp_path / "jobs")
    with ex.allocation(timeout_min=5) as alloc:
        steps = [alloc.submit(api_tasks.add, k, k) for k in range(3)]
        assert [s.result() for s in steps] == [0, 2, 4]


def test_the_submission_rate_is_bounded() -> None:
    from slurm_gpu.api.executor import RateLimit

    rate = RateLimit(20.0)
    start = time.monotonic()
    for _ in range(6):
        rate.take()
    assert time.monotonic() - start >= 5 / 20.0 - 0.01  # 6 calls: 5 gaps of 50 ms at least


def test_a_shell_command_is_requeued_on_the_stop_signal_and_resumes_from_its_own_state(tmp_path) -> None:
    state = tmp_path / "n"
    script = (f"n=$(cat {state} 2>/dev/null || echo 0); echo start $n >&2; while [ $n -lt 40 ]; do n=$((n+1)); "
              f"echo $n > {state}; sleep 0.05; done; echo done $n")
    ex = LocalExecutor(tmp_path / "jobs")
    ex.update_parameters(checkpoint=True, max_requeues=2)
    job = ex.submit(RequeueCommand(["bash", "-c", script]))
    _wait_for(lambda: state.exists() and int(state.read_text() or 0) >= 5)
    ex.preempt(job)
    assert job.result() == "done 40\n" and job.restarts == 1
    starts = [int(line.split()[1]) for line in (job.stderr() or "").splitlines() if line.startswith("start ")]
    assert starts[0] == 0 and starts[1] >= 5, job.stderr()
