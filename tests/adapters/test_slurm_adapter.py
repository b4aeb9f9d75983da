# SPDX-License-Identifier: Apache-2.0
"""The Slurm CLI adapter: which port it satisfies, the one runner's bounds, and the real lab."""

from __future__ import annotations

import io
import os
import sys
import time
from pathlib import Path

import pytest

from slurm_gpu.adapters.slurm import SbatchCli, run_slurm
from slurm_gpu.errors import SlurmUnreachable, SubmitError
from slurm_gpu.ports import JobWatch, SlurmClient
from slurm_gpu.submit.follow import follow_job


def test_sbatchcli_satisfies_the_slurm_client_port():
    client: SlurmClient = SbatchCli(env={"PATH": os.environ["PATH"]})  # the static claim (mypy checks it)
    assert isinstance(client, SlurmClient) and isinstance(client, JobWatch)  # the runtime one
    assert not isinstance(object(), SlurmClient)


def test_runner_bounds_every_call():
    with pytest.raises(SlurmUnreachable, match=r"sleep gave no answer within 0.2 s"):
        run_slurm(["sleep", "5"], timeout_s=0.2)
    with pytest.raises(SubmitError, match="no-such-slurm-client: command not found"):
        run_slurm(["no-such-slurm-client"], timeout_s=1)
    with pytest.raises(SubmitError, match=r"\(exit 3\): boom"):
        run_slurm([sys.executable, "-c", "import sys; sys.stderr.write('x: error: boom\\n'); sys.exit(3)"],
                  timeout_s=10, check=True)


def test_streamed_call_gives_lines_as_they_come_and_keeps_the_bounds():
    from slurm_gpu.adapters.slurm import stream_slurm

    py = [sys.executable, "-c"]
    # lines without their newline; the last one may have none; a line over the bound is dropped whole
    script = "import sys; sys.stdout.write('a|b\\n' + 'x' * 5000 + '\\nc|\\xff|d\\ntail')"
    with stream_slurm([*py, script], timeout_s=10, max_line=4096) as lines:
        got = list(lines)
    assert got == ["a|b", "c|\xff|d", "tail"] and lines.dropped == 1 and lines.ended
    with stream_slurm([*py, "import sys; sys.stdout.buffer.write(b'\\xff\\n')"], timeout_s=10, max_line=4) as lines:
        assert list(lines) == ["\ufffd"]  # no UTF-8: replaced, not raised
    # read while the command runs: the first line is there before the command has written the second
    slow = "import sys, time; print('one', flush=True); time.sleep(3); print('two')"
    with stream_slurm([*py, slow], timeout_s=10) as lines:
        it = iter(lines)
        t0 = time.monotonic()
        assert next(it) == "one" and time.monotonic() - t0 < 2.5
        assert list(it) == ["two"]
    # a failure once the lines are read: one line, its exit code
    fail = "import sys; print('x|y'); sys.stderr.write('sacct: error: boom\\n' * 20000); sys.exit(3)"
    with pytest.raises(SubmitError, match=r"^sacct \(exit 3\): boom$"):
        with stream_slurm([*py, fail], timeout_s=10, what="sacct") as lines:
            assert list(lines) == ["x|y"]
    # the whole call within the timeout, reading included: killed at the deadline
    endless = "import time\nwhile True:\n print('row', flush=True); time.sleep(0.05)"
    t0 = time.monotonic()
    with pytest.raises(SlurmUnreachable, match="gave no whole answer within 1 s"):
        with stream_slurm([*py, endless], timeout_s=1) as lines:
            assert sum(1 for _ in lines) > 3
    assert time.monotonic() - t0 < 5
    # a reader that has enough stops the command; that is no failure
    with stream_slurm([*py, endless], timeout_s=10) as lines:
        assert next(iter(lines)) == "row"
    with pytest.raises(SubmitError, match="no-such-slurm-client: command not found"):
        with stream_slurm(["no-such-slurm-client"], timeout_s=1):
            pass


def _client(slurm_lab, **kw) -> SbatchCli:
    return SbatchCli(env=slurm_lab.env(), **kw)


@pytest.mark.slurm
def test_submit_detail_state_and_follow_in_the_lab(slurm_lab):
    wd = slurm_lab.workdir("adapter")
    script = os.path.join(wd, "job.sh")
    with open(script, "w", encoding="utf-8") as fh:
        fh.write("#!/bin/bash\nsleep 2\nexit 3\n")
    os.chmod(script, 0o755)
    cli = _client(slurm_lab)
    node = next(n.name for n in slurm_lab.spec.nodes if n.gpu_type == "h100")
    opts = ["-p", "batch", "-w", node, "--gres=gpu:h100:2", "--cpus-per-gpu=2", "-t", "2", "-o", f"{wd}/out-%j.txt"]
    verdict = cli.test_only(opts, script)
    assert verdict.job_id is not None and verdict.nodes == node and verdict.partition == "batch"
    job = cli.submit(opts, script).job_id
    assert slurm_lab.wait(job, {"RUNNING"}, timeout_s=60) in {"RUNNING", "FAILED"}
    fields, allocs = cli.job_detail(job)
    assert fields["JobId"] == str(job) and fields["Partition"] == "batch"
    if fields["JobState"] == "RUNNING":
        (alloc,) = allocs
        assert alloc.node == node and len(alloc.gpu_idx) == 2 and len(alloc.cpu_ids) == 4
    out = io.StringIO()
    assert follow_job(cli, job, out, interval_s=0.5) == 3  # the job's own exit code
    assert out.getvalue().splitlines()[-1].startswith(f"job {job}: FAILED") and "exit code 3" in out.getvalue()


@pytest.mark.slurm
@pytest.mark.usefixtures("slurm_alone")  # Slurm's own message, not the policy plugin's
def test_submit_failure_is_one_line_from_slurm(slurm_lab, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\ntrue\n")
    with pytest.raises(SubmitError, match=r"^sbatch: Batch job submission failed: Invalid partition name specified$"):
        _client(slurm_lab).submit(["-p", "no-such-partition", "-t", "1"], str(script))


@pytest.mark.slurm
def test_follow_reports_the_last_real_error(slurm_lab, tmp_path):
    """A controller that never answers: follow gives up after its misses and says why (the runner's
    timeout message), not a generic 'Slurm no longer knows it'."""
    conf = tmp_path / "slurm.conf"
    text = Path(slurm_lab.slurm_conf).read_text(encoding="utf-8")
    # same cluster, but slurmctld on a port nobody listens on
    conf.write_text("\n".join(ln for ln in text.splitlines() if not ln.startswith("SlurmctldPort=")) +
                    "\nSlurmctldPort=1\n")
    cli = SbatchCli(env=dict(slurm_lab.env(), SLURM_CONF=str(conf)), timeout_s=1)
    with pytest.raises(SubmitError, match=r"job 1: no state after 3 tries; last error: squeue gave no answer"):
        follow_job(cli, 1, io.StringIO(), interval_s=0, max_misses=2)


@pytest.mark.slurm
def test_follow_of_a_job_slurm_does_not_know(slurm_lab):
    with pytest.raises(SubmitError, match="Slurm no longer knows it"):
        follow_job(_client(slurm_lab), 99999999, io.StringIO(), interval_s=0, max_misses=1)


def test_output_that_is_no_utf8_is_read_not_raised() -> None:
    """A job's name or comment is any user's bytes: scontrol prints them as they are."""
    from slurm_gpu.adapters.slurm.runner import run_slurm

    proc = run_slurm(["printf", "JobName=a\\377b Comment=\\300"], env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
    assert proc.stdout == "JobName=a\ufffdb Comment=\ufffd"
