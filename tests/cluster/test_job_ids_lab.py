# SPDX-License-Identifier: Apache-2.0
"""Job ids outside Slurm's range, in the lab: ``why`` and ``jobstats`` are given ``0`` (every job, to
``scontrol show job`` and ``sacct -j``) and ids past 32 bits (the clients wrap them: 2**32 + J is job J)
while the lab user's jobs exist. Each is a usage error (exit 2, one line naming the accepted forms),
never an answer for another job. The accepted forms (a hetjob component ``J+1``, an array task ``J_2``)
answer for exactly that job; and a real Slurm answer for other ids (what ``scontrol show job -o 0`` and
``sacct -j 0`` print) is refused by the record check. Jobs are held and cancelled by id at the end."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from slurm_gpu.errors import SlurmGpuError

pytestmark = pytest.mark.slurm

HOLD = ["-p", "batch", "-t", "5", "-o", "/dev/null", "--hold"]


def cli(slurm_lab, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", *args], capture_output=True, text=True,
                          env=slurm_lab.env(), timeout=60, check=False)


@pytest.fixture(scope="module")
def jobs(slurm_lab):
    """(a plain job, an array of 3 tasks, a hetjob of 2 components), all held (pending, never run), and
    one that runs at once (sacct -j 0 lists eligible jobs only)."""
    plain = slurm_lab.sbatch([*HOLD, "--wrap", "sleep 60"])
    array = slurm_lab.sbatch([*HOLD, "--array=1-3", "--wrap", "sleep 60"])
    het = slurm_lab.sbatch([*HOLD, "--wrap", "sleep 60", ":", "-p", "batch", "-t", "5"])
    ran = slurm_lab.sbatch(["-p", "batch", "-t", "1", "-o", "/dev/null", "--wrap", "true"])
    yield plain, array, het, ran
    slurm_lab.cancel(plain, array, het, ran)


@pytest.fixture(scope="module")
def ran_het(slurm_lab):
    """A hetjob of 2 components that ran, once accounting lists both. (A pending hetjob is one record in
    24.11's accounting, ``J`` alone, its ``J+0``/``J+1`` only once it starts; 22.05 lists them at once.)"""
    het = slurm_lab.sbatch(["-p", "batch", "-t", "1", "-o", "/dev/null", "--wrap", "true", ":", "-p", "batch",
                            "-t", "1"])
    slurm_lab.wait(het, timeout_s=120)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        out = slurm_lab.run(["sacct", "-a", "-P", "-n", "-X", "-j", f"{het}+1", "--format=JobID"], as_root=True).stdout
        if f"{het}+1" in out.split():
            break
        time.sleep(0.5)
    yield het
    slurm_lab.cancel(het)


def _usage_error(p: subprocess.CompletedProcess[str], *forms: str) -> str:
    assert p.returncode == 2 and "Traceback" not in p.stderr and p.stdout == "", (p.returncode, p.stdout, p.stderr)
    (line,) = [ln for ln in p.stderr.splitlines() if ln.startswith("Error:")]
    assert "not a Slurm job id" in line and "1 to 4294967293" in line and all(f in line for f in forms), line
    return line


@pytest.mark.parametrize("verb", ["why", "jobstats"])
def test_ids_outside_slurms_range_are_usage_errors(slurm_lab, jobs, verb):
    plain, array, het, ran = jobs
    # before: `why 0` explained the first job of the queue and `jobstats 0` summed up every job, exit 0;
    # 2**32 + J was job J (10 digits, like any id)
    for bad in ("0", str(2**32), str(2**32 + plain), str(2**32 + array), "4294967294", "4294967295", "٣",
                f"{plain}_٣", "00", f"{het}+128", f"{array}_4000001"):
        line = _usage_error(cli(slurm_lab, verb, "--", bad), "an array task 1234_5", "a hetjob component 1234+1")
        assert repr(bad)[1:-1] in line
    assert "1234_*" in _usage_error(cli(slurm_lab, "jobstats", "0"))  # jobstats also takes a whole array


def test_why_answers_for_the_form_asked(slurm_lab, jobs):
    plain, array, het, ran = jobs
    for asked, shown in ((str(plain), plain), (f"{het}+1", het + 1), (f"{array}_2", array)):
        p = cli(slurm_lab, "why", "--json", "--no-estimate", asked)
        assert p.returncode == 0, p.stderr
        doc = json.loads(p.stdout)
        assert doc["job_id"] == str(shown) and doc["reason"] == "JobHeldUser", doc


def test_jobstats_answers_for_the_form_asked(slurm_lab, jobs, ran_het):
    _, array, _, _ = jobs
    p = cli(slurm_lab, "jobstats", "--json", f"{ran_het}+1")
    assert p.returncode == 0, p.stderr
    assert [j["job_id"] for j in json.loads(p.stdout)["jobs"]] == [f"{ran_het}+1"]
    p = cli(slurm_lab, "jobstats", "--json", f"{array}_*")
    assert p.returncode == 0, p.stderr
    assert [j["job_id"] for j in json.loads(p.stdout)["jobs"]] == [f"{array}_[1-3]"]


def test_an_answer_for_other_ids_is_refused(slurm_lab, jobs):
    """What Slurm answers for ``0`` (every job), checked as if another id had been asked."""
    from slurm_gpu.cli.why import records_for
    from slurm_gpu.cluster.jobstats_io import JOBSTATS_FIELDS, rows_of
    from slurm_gpu.slurm.job_id import parse_job_id
    from slurm_gpu.slurm.records import read_jobs
    from slurm_gpu.slurm.release import SACCT_JOB_ZERO, since
    from slurm_gpu.slurm.sacct import parse_sacct

    plain, array, het, ran = jobs
    # every job (as scontrol answers for 0, and 22.05's squeue --json for any -j), by the one job reader
    every = [j.fields for j in read_jobs(slurm_lab.run(["squeue", "--json", "-t", "all"], check=True).stdout).jobs]
    assert {str(plain), str(het + 1)} <= {f["JobId"] for f in every}
    with pytest.raises(SlurmGpuError, match="squeue answered for job"):
        records_for(parse_job_id(str(het + 100)), every)
    with pytest.raises(SlurmGpuError):
        records_for(parse_job_id(f"{plain}+1"), every)  # a plain job has no component 1
    assert [r["JobId"] for r in records_for(parse_job_id(str(het)), every)] == [str(het), str(het + 1)]
    fmt = f"--format={','.join(JOBSTATS_FIELDS)}"
    zero = slurm_lab.run(["sacct", "-a", "-P", "-j", "0", fmt])
    if since(SACCT_JOB_ZERO, slurm_lab.version) == "refused":  # 26.05: "JobID can not be zero", exit 1
        assert zero.returncode != 0 and "can not be zero" in zero.stderr, zero.stderr
        zero = slurm_lab.run(["sacct", "-a", "-P", fmt], check=True)  # every job, as 0 read before
    rows = parse_sacct(zero.stdout)
    assert str(ran) in {r["JobID"] for r in rows}  # Slurm's reading of 0: every eligible job
    with pytest.raises(SlurmGpuError, match="sacct answered for job"):
        rows_of(parse_job_id(str(ran + 100)), rows)
    assert {r["JobID"].split(".")[0] for r in rows_of(parse_job_id(str(ran)), rows)} == {str(ran)}  # and its steps
