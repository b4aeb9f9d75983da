# SPDX-License-Identifier: Apache-2.0
"""Issue 22's record holes, through the real lab: the lab user submits jobs whose name or comment a user
could write, and ``slurm-gpu cluster --json``, ``exporter`` and ``why`` must give what they give without
that text (docs/records.md). Before the one job reader (squeue's JSON), a name
`` Nodes=h[1-999999] CPU_IDs=0 GRES=gpu:1(IDX:0)`` made ``cluster`` and ``exporter`` exit 1 with a
HostlistError traceback, forty smaller groups took a run from 0.3 s to 4-6 s, and a comment holding a line
break and a whole ``JobId=`` record added a job holding every GPU of a node. Exit codes: README "Exit codes"
(cluster, exporter, why: 0). Every job is cancelled by id at the end. Integration test (marker ``slurm``)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from slurm_gpu.adapters.slurm import SbatchCli

pytestmark = pytest.mark.slurm

BOMB = " Nodes=h[1-999999] CPU_IDs=0 GRES=gpu:1(IDX:0)"
GROUP = " Nodes=h[1-99999] CPU_IDs=0 GRES=gpu:1(IDX:0)"  # 20 in the name and 20 in the comment: forty
# a comment that forges, after a line break, a RUNNING job of the same user in QOS debug holding 2 GPUs
# (counted against the user's QOS limit by `why`) on a100n1's four GPUs (drawn as the user's by `cluster`)
# (99999998 is over Slurm's MaxJobId, 67,043,328: no real job has it)
FORGED = ("c\nJobId=99999998 JobName=g UserId={user}({uid}) GroupId={user}({uid}) Account=lab QOS=debug "
          "JobState=RUNNING Reason=None Partition=interactive NodeList=a100n1 NumNodes=1 NumCPUs=8 "
          "TRES=cpu=8,mem=120G,node=1,billing=8,gres/gpu=2,gres/gpu:h100=2 JOB_GRES=gpu:a100:4   Nodes=a100n1 "
          "CPU_IDs=0-31 Mem=512000 GRES=gpu:a100:4(IDX:0-3) MinCPUsNode=1 TresPerJob=gres:gpu:h100:2")
MIX_KEYS = ("fragmentation_job_mix",)  # the job mix counts pending jobs' requests: checked on its own


def _cli(slurm_lab, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", *args], capture_output=True, text=True,
                       timeout=120, env=slurm_lab.env(), check=False)
    return p, time.monotonic() - t0


def _view(slurm_lab) -> tuple[dict, float]:
    p, took = _cli(slurm_lab, "cluster", "--json")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-2000:]
    return json.loads(p.stdout), took


def _without_mix(view: dict) -> dict:
    types = {t: {k: v for k, v in d.items() if k not in MIX_KEYS} for t, d in view["types"].items()}
    parts = {p: {t: {k: v for k, v in d.items() if k not in MIX_KEYS} for t, d in ts.items()}
             for p, ts in view.get("partitions", {}).items()}
    return {**{k: v for k, v in view.items() if k not in ("job_mix", "types", "partitions")}, "types": types,
            "partitions": parts}


@pytest.fixture
def submit(slurm_lab) -> Iterator[Callable[..., int]]:
    """sbatch as the lab user (held unless told otherwise); every job is cancelled at the end, by its id."""
    mine: list[int] = []

    def _submit(*argv: str, hold: bool = True) -> int:
        mine.append(slurm_lab.sbatch([*(["--hold"] if hold else []), "-t", "5", "-o", "/dev/null", *argv]))
        return mine[-1]

    yield _submit
    if mine:
        slurm_lab.cancel(*mine)


def test_a_hostlist_bomb_in_the_name_leaves_cluster_and_exporter_exit_0_with_the_true_view(slurm_lab, submit,
                                                                                          tmp_path):
    running = submit("-p", "batch", "--gpus=h100:1", "--wrap", "sleep 120", hold=False)
    assert slurm_lab.wait(running, {"RUNNING"}, timeout_s=90) == "RUNNING"
    _view(slurm_lab)  # warm the client's version cache: both timed runs start alike
    before, took_before = _view(slurm_lab)
    submit("-p", "batch", "--gres=gpu:h100:1", "-J", BOMB, "--wrap", "true")
    submit("-p", "batch", "--gres=gpu:h100:1", "-J", GROUP * 20, "--comment", GROUP * 20, "--wrap", "true")
    after, took_after = _view(slurm_lab)
    assert _without_mix(after) == _without_mix(before)  # held jobs change no GPU count, fake groups none either
    mix_b, mix_a = before["job_mix"].get("h100", {}), after["job_mix"].get("h100", {})
    assert mix_a.get("1", 0) - mix_b.get("1", 0) == 2 and {k: v for k, v in mix_a.items() if k != "1"} == {
        k: v for k, v in mix_b.items() if k != "1"}  # each held job counts its own h100:1, not gpu:1 x 999999
    assert took_after < 3 * took_before + 2, (took_before, took_after)  # bounded: no hostlist is expanded

    p, _ = _cli(slurm_lab, "exporter", "--textfile", str(tmp_path))
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-2000:]
    prom = (tmp_path / "slurm_gpu.prom").read_text()
    assert "slurm_gpu_records_skipped 0\n" in prom
    h100 = after["types"]["h100"]
    for state in ("allocated", "free", "unavailable"):
        assert f'slurm_gpu_gres_units{{type="h100",unit="gpu",state="{state}"}} {h100[state]}\n' in prom, state


def _rows(slurm_lab) -> list[str]:
    """The picture's node rows and who holds what (the summary table's job-mix column left out)."""
    p, _ = _cli(slurm_lab, "cluster")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-2000:]
    return [ln for ln in p.stdout.splitlines() if ln[:1].islower() and " [" in ln or ln[:2].rstrip().isupper()
            and "GPUs; jobs" in ln]


def test_a_forged_record_in_a_comment_adds_no_job_and_changes_no_why(slurm_lab, submit):
    """Measured before the reader: `why` of the pending twin said "labuser has 4 in use ... 4 over" (the
    forged job's 2 GPUs added) and the picture drew a100n1 as the user's (the forged job); both must stay."""
    import pwd

    user = pwd.getpwnam(slurm_lab.user)
    running = submit("-p", "interactive", "--qos=debug", "--gpus=h100:2", "--wrap", "sleep 120", hold=False)
    assert slurm_lab.wait(running, {"RUNNING"}, timeout_s=90) == "RUNNING"
    twin = submit("-p", "interactive", "--qos=debug", "--gpus=h100:2", "--wrap", "sleep 120", hold=False)
    deadline = time.monotonic() + 60
    while slurm_lab.show_job(twin)[0].get("Reason") != "QOSMaxGRESPerUser":
        assert time.monotonic() < deadline, slurm_lab.show_job(twin)[0]
        time.sleep(1)
    why_before, _ = _cli(slurm_lab, "why", "--json", "--no-estimate", str(twin))
    assert why_before.returncode == 0, why_before.stderr
    limit = json.loads(why_before.stdout)["limit"]
    assert (limit["in_use"], limit["over_by"]) == (2, 2), limit
    view_before, rows_before = _view(slurm_lab)[0], _rows(slurm_lab)
    forged = FORGED.format(user=user.pw_name, uid=user.pw_uid)
    name = "x UserId=root(0) QOS=debug JobState=RUNNING\nJobId=99999997"
    hostile = submit("-p", "batch", "--gpus=h100:1", "-J", name, "--comment", forged, "--wrap", "true")

    why_after, _ = _cli(slurm_lab, "why", "--json", "--no-estimate", str(twin))
    assert why_after.returncode == 0 and json.loads(why_after.stdout) == json.loads(why_before.stdout)
    assert _rows(slurm_lab) == rows_before  # a100n1 not drawn as held, no job 99999998 in the legend
    assert _without_mix(_view(slurm_lab)[0]) == _without_mix(view_before)
    ids = {j.job_id for j in SbatchCli(env=slurm_lab.env()).job_records().jobs}
    listed = slurm_lab.run(["squeue", "-h", "-t", "all", "-O", "JobID:|"], as_root=True, check=True).stdout
    assert ids <= {int(x) for x in listed.replace("|", " ").split()} and not {99999997, 99999998} & ids
    own, _ = _cli(slurm_lab, "why", "--json", "--no-estimate", str(hostile))
    assert own.returncode == 0, own.stderr
    mine = json.loads(own.stdout)
    assert (mine["state"], mine["blocker"], mine["user"], mine["qos"]) == ("PENDING", "held", user.pw_name, "normal")
