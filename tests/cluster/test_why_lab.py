# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu why`` in the lab: jobs submitted as the lab user, each pending on one blocker (read back
with ``scontrol`` by the test itself), and ``why --json`` must name it; the limits it reports are checked
against the lab policy (examples/policies/university.yaml). Every job is cancelled by id at the end."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

pytestmark = pytest.mark.slurm

SLEEP = ["-o", "/dev/null", "--wrap", "sleep 300"]


def slurm_gpu_why(slurm_lab, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", "why", *args], capture_output=True,
                          text=True, env=slurm_lab.env(), timeout=60, check=False)


def why_json(slurm_lab, job_id: int) -> dict:
    r = slurm_gpu_why(slurm_lab, "--json", str(job_id))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def reason_of(slurm_lab, job_id: int) -> tuple[str, str]:
    fields, _ = slurm_lab.show_job(job_id)
    return fields["JobState"], fields.get("Reason", "")


def wait_for(pred: Callable[[], object], timeout_s: float = 60, what: str = "") -> object:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout_s:g} s waiting for {what}")


@pytest.fixture
def submit(slurm_lab) -> Iterator[Callable[..., int]]:
    """sbatch as the lab user; every job submitted here is cancelled at the end, by its id."""
    mine: list[int] = []

    def _submit(*argv: str) -> int:
        mine.append(slurm_lab.sbatch(list(argv)))
        return mine[-1]

    yield _submit
    if mine:
        slurm_lab.cancel(*mine)


def test_resources(slurm_lab, submit):
    # all 16 h100 of both nodes (QOS high), then 8 more h100 (QOS normal, so no per-user QOS limit is
    # hit): the first of them in line for the h100s waits on Resources
    asks = {submit("-p", "batch", "--qos=high", "-t", "5", "-N", "2", "--gpus-per-node=h100:8", *SLEEP): (16, 2),
            submit("-p", "batch", "--qos=normal", "-t", "5", "--gpus=h100:8", *SLEEP): (8, 1)}

    def waiting_on_resources() -> int | None:
        return next((j for j in asks if reason_of(slurm_lab, j) == ("PENDING", "Resources")), None)

    job = wait_for(waiting_on_resources, what="one of the h100 jobs to pend on Resources")
    answer = why_json(slurm_lab, job)
    assert (answer["pending"], answer["reason"], answer["blocker"]) == (True, "Resources", "resources")
    gpus, nodes = asks[job]
    assert answer["request"] == {"gpus": gpus, "gpu_type": "h100", "nodes": nodes, "gpus_per_node": 8,
                                 "time_limit_min": 5}
    assert answer["could_run_on"] == ["h100n1", "h100n2"]
    for alt in answer["alternatives"]:  # what would start now asks for less, or another type
        assert alt["gpus"] < gpus or alt["gpu_type"] != "h100"
        assert alt["slurm_estimate"].startswith("would start at "), alt  # sbatch --test-only's own verdict


def test_qos_gpu_limit(slurm_lab, submit):
    # QOS debug: max_gpus_per_user 2 in the lab policy; two 2-GPU debug jobs of one user
    jobs = [submit("-p", "interactive", "--qos=debug", "-t", "5", "--gpus=h100:2", *SLEEP) for _ in range(2)]

    def over_the_qos() -> int | None:
        return next((j for j in jobs if reason_of(slurm_lab, j) == ("PENDING", "QOSMaxGRESPerUser")), None)

    job = wait_for(over_the_qos, what="a debug job to pend on QOSMaxGRESPerUser")
    answer = why_json(slurm_lab, job)
    assert (answer["reason"], answer["blocker"]) == ("QOSMaxGRESPerUser", "qos_gpu_limit")
    limit = answer["limit"]
    assert (limit["name"], limit["field"], limit["limit"], limit["requested"]) == ("debug", "MaxTRESPerUser", 2, 2)
    assert limit["in_use"] >= 2 and limit["over_by"] == limit["in_use"]
    assert answer["alternatives"] == []  # no room left under the QOS: nothing to suggest


def test_held(slurm_lab, submit):
    job = submit("--hold", "-p", "interactive", "-t", "5", "--gpus=h100:1", *SLEEP)
    wait_for(lambda: reason_of(slurm_lab, job) == ("PENDING", "JobHeldUser"), what="the job to be held")
    answer = why_json(slurm_lab, job)
    assert (answer["reason"], answer["blocker"]) == ("JobHeldUser", "held")
    assert answer["advice"] == [f"release it: scontrol release {job}"]
    text = slurm_gpu_why(slurm_lab, str(job))
    assert text.returncode == 0 and f"job {job} (" in text.stdout and "PENDING: JobHeldUser" in text.stdout


def test_dependency(slurm_lab, submit):
    held = submit("--hold", "-p", "interactive", "-t", "5", "--gpus=h100:1", *SLEEP)
    job = submit(f"--dependency=afterok:{held}", "-p", "interactive", "-t", "5", "--gpus=h100:1", *SLEEP)
    wait_for(lambda: reason_of(slurm_lab, job) == ("PENDING", "Dependency"), what="the dependency")
    answer = why_json(slurm_lab, job)
    assert (answer["reason"], answer["blocker"]) == ("Dependency", "dependency")
    assert answer["advice"] == [f"waits for job {held} (afterok), which is PENDING (JobHeldUser)"]
    assert answer["alternatives"] == []


def test_not_pending_and_unknown(slurm_lab, submit):
    job = submit("-p", "interactive", "-t", "5", "--gpus=a100:1", "-o", "/dev/null", "--wrap", "true")
    slurm_lab.wait(job, timeout_s=120)
    r = slurm_gpu_why(slurm_lab, str(job))
    assert r.returncode == 0 and r.stdout.strip().splitlines() == [
        f"job {job} is COMPLETED on a100n1: not pending, nothing holds it"]
    r = slurm_gpu_why(slurm_lab, "999999999")
    assert r.returncode == 1 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
    assert "unknown to Slurm" in r.stderr


# Last in the module: ``slurm_alone`` (module scope) lets this one job past the lab's job_submit.lua, which
# refuses a time over the partition's limit at submission; Slurm itself queues it (EnforcePartLimits=NO)
# and the plugin is put back when the module ends.
@pytest.mark.usefixtures("slurm_alone")
def test_partition_time_limit(slurm_lab, submit):
    job = submit("-p", "interactive", "--qos=normal", "-t", "5:00:00", "--gpus=h100:1", *SLEEP)
    wait_for(lambda: reason_of(slurm_lab, job) == ("PENDING", "PartitionTimeLimit"), what="PartitionTimeLimit")
    answer = why_json(slurm_lab, job)
    assert (answer["reason"], answer["blocker"]) == ("PartitionTimeLimit", "partition_time_limit")
    # the lab policy: interactive max_time 4h; the job asks 5 h
    limit = answer["limit"]
    assert (limit["field"], limit["limit"], limit["requested"], limit["over_by"]) == ("MaxTime", 240, 300, 60)
    assert answer["advice"][0] == "ask for --time=04:00:00 or less"
