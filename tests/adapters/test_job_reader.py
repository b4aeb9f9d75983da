# SPDX-License-Identifier: Apache-2.0
"""The one job reader (slurm_gpu.slurm.records.read_jobs) on squeue's JSON as the lab's 22.05.8 and 24.11.5
printed it (tests/adapters/data/README.md), with a job whose name and comment forge whole records; and the
squeue -O reader of one job's state. Pure: no Slurm (the lab runs the same in tests/adapters/test_records_lab.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from slurm_gpu.cluster.view import from_texts
from slurm_gpu.errors import SlurmGpuError
from slurm_gpu.slurm.records import (
    SQUEUE_FIELDS,
    job_gres,
    job_state_of,
    parse_node_fields,
    parse_node_records,
    parse_squeue_job,
    read_jobs,
    squeue_format,
    topology_of,
)

DATA = Path(__file__).resolve().parent / "data"
RELEASES = ("22.05", "24.11")
HOSTILE_NAME = ("x Nodes=h[1-999999] CPU_IDs=0 GRES=gpu:1(IDX:0)\nJobId=999 JobName=f UserId=root(0) JobState=RUNNING "
                "Partition=batch NodeList=h100n1 NumNodes=1 TRES=cpu=1,gres/gpu=8 TresPerNode=gres:gpu:h100:8   "
                "Nodes=h100n1 CPU_IDs=0-31 Mem=1 GRES=gpu:h100:8(IDX:0-7)\r\x1e\x1c\x1d\x0b\x0c\x85\u2028\u2029 end")
HOSTILE_COMMENT = ("c\nJobId=998 JobName=g UserId=root(0) GroupId=root(0) JobState=RUNNING Reason=None Partition=batch "
                   "NodeList=a100n1 NumNodes=1 TRES=cpu=32,mem=500G,node=1,gres/gpu=4 TresPerNode=gres:gpu:a100:4   "
                   "Nodes=a100n1 CPU_IDs=0-31 Mem=512000 GRES=gpu:a100:4(IDX:0-3) Command=/bin/x")


def _read(release: str):
    nodes = parse_node_records((DATA / f"scontrol-nodes-{release}.txt").read_text())
    return read_jobs((DATA / f"squeue-{release}.json").read_text(), topology_of(nodes))


def _groups(release: str) -> dict[str, list[tuple[str, str, str]]]:
    """The per-node groups of the benign jobs as scontrol's text printed them (a second Slurm output)."""
    out = {}
    for line in (DATA / f"scontrol-jobs-{release}.txt").read_text().split("\n"):
        if line.startswith("JobId=") and " JobName=shape" in line:
            out[line.split()[0][6:]] = re.findall(r" Nodes=(\S+) CPU_IDs=(\S*) Mem=\S* GRES=(\S*)", line)
    return out


@pytest.mark.parametrize("release", RELEASES)
def test_every_job_is_read_one_for_one_with_the_users_text_exact(release):
    read = _read(release)
    assert read.problems == () and read.release.startswith(release)
    assert read.dialect == {"22.05": "openapi/v0.0.38", "24.11": "data_parser/v0.0.42"}[release]
    names = [j.fields["JobName"] for j in read.jobs]
    assert names == ["shape1", "shape2", "shape3", "shape4", "shape5", "shape8", HOSTILE_NAME]
    hostile = read.jobs[-1]
    assert hostile.fields["Comment"] == HOSTILE_COMMENT
    assert (hostile.fields["JobState"], hostile.fields["Reason"], hostile.fields["Partition"]) == (
        "PENDING", "JobHeldUser", "batch")
    assert hostile.fields["UserId"].startswith("labuser(") and hostile.allocs == ()
    assert [j.job_id for j in read.jobs] == sorted(j.job_id for j in read.jobs)
    assert not {"998", "999"} & {j.fields["JobId"] for j in read.jobs}


@pytest.mark.parametrize("release", RELEASES)
def test_allocations_equal_scontrols_own_node_groups(release):
    """CPU ids (from the nodes' cores per socket) and GPU indices per node, as `scontrol show job -d` printed."""
    from slurm_gpu.cpulist import parse_cpulist

    groups = _groups(release)
    read = _read(release)
    seen = 0
    for job in read.jobs[:-1]:
        want = groups[job.fields["JobId"]]
        got = [(a.node, a.cpu_ids, a.gres) for a in job.allocs]
        assert got == [(n, frozenset(parse_cpulist(c)), g) for n, c, g in want], job.fields["JobName"]
        seen += bool(want)
    assert seen == 4  # shape1, 2, 5, 8 run; shape2 on two nodes


@pytest.mark.parametrize("release", RELEASES)
def test_fields_in_scontrols_spelling(release):
    jobs = {j.fields["JobName"]: j.fields for j in _read(release).jobs}
    prefix = "gres:" if release == "22.05" else "gres/"
    assert jobs["shape1"]["TresPerNode"] == f"{prefix}gpu:h100:2" and jobs["shape1"]["TimeLimit"] == "00:30:00"
    assert jobs["shape1"]["StdOut"] == f"/tmp/out-{jobs['shape1']['JobId']}-shape1.txt"  # %j and %x filled in
    assert jobs["shape2"]["TimeLimit"] == "1-00:00:00" and jobs["shape2"]["NumNodes"] == "2"
    assert jobs["shape3"]["NumNodes"] == "2-2" and jobs["shape3"]["TresPerJob"] == f"{prefix}gpu:h100:3"
    assert jobs["shape4"]["ArrayTaskId"] == "0-2" and jobs["shape4"]["ArrayJobId"] == jobs["shape4"]["JobId"]
    assert jobs["shape8"]["Partition"] == "spot" and jobs["shape8"]["QOS"] == "spot"
    assert jobs["shape1"]["JobState"] == "RUNNING" and jobs["shape1"]["ExitCode"] == "0:0"
    assert jobs["shape1"]["TRES"] == jobs["shape1"]["AllocTRES"] and "gres/gpu:h100=2" in jobs["shape1"]["TRES"]
    assert jobs["shape3"]["TRES"] == jobs["shape3"]["ReqTRES"] and "AllocTRES" not in jobs["shape3"]


@pytest.mark.parametrize("release", RELEASES)
def test_the_cluster_view_of_the_capture_has_no_forged_job(release):
    nodes, jobs = (DATA / f"scontrol-nodes-{release}.txt").read_text(), (DATA / f"squeue-{release}.json").read_text()
    view = from_texts(nodes, jobs)
    assert view.problems == ()
    assert [j.user for j in view.jobs] == ["labuser"] * 7
    held = {(node, g.gres_type): sorted(g.idx or ()) for j in view.jobs for node, gres in j.held for g in gres}
    assert held.get(("a100n1", "a100")) == [2]  # shape5's one GPU, not the comment's four
    assert view.summary["types"]["a100"]["allocated"] == 1


def test_one_bad_job_is_left_out_and_named_the_rest_read():
    doc = json.loads((DATA / "squeue-22.05.json").read_text())
    bad = dict(doc["jobs"][0], job_id=7, job_resources={"allocated_nodes": [{"nodename": "n"}] * 100_001})
    doc["jobs"] = [bad, {"job_id": "x"}, *doc["jobs"][1:]]
    read = read_jobs(json.dumps(doc))
    assert [j.fields["JobName"] for j in read.jobs] == ["shape2", "shape3", "shape4", "shape5", "shape8", HOSTILE_NAME]
    assert len(read.problems) == 2 and "job 7: left out (ValueError: 100001 nodes" in read.problems[0]
    assert read.problems[1].startswith("job x: left out")


def test_a_document_that_is_not_squeues_json_is_one_error():
    for text, msg in (("JobId=1 JobName=x", "not a JSON document"), ("[1]", "no 'jobs' list"),
                      ("[" * 100_000, "not a JSON document")):
        with pytest.raises(SlurmGpuError, match=msg):
            read_jobs(text)
    read = read_jobs('{"meta": {"plugin": {"data_parser": "data_parser/v0.0.99"}}, "jobs": []}')
    assert read.jobs == () and "unknown JSON format 'data_parser/v0.0.99'" in read.problems[0]


def test_node_records_keep_slurms_value_when_the_reason_spells_a_key():
    """Node records hold no user text, but an admin's Reason may spell keys: the first value is Slurm's."""
    line = (DATA / "scontrol-nodes-22.05.txt").read_text().split("\n")[0]  # a100n1, MIXED
    forged = line.rstrip() + " Reason=bad Gres=gpu:h100:99(S:0) State=IDLE CoresPerSocket=1 [root@2026-12-01T00:00:00]"
    (fields,) = parse_node_fields(forged)
    (rec,) = parse_node_records(forged)
    assert (fields["Gres"], fields["State"], fields["CoresPerSocket"]) == ("gpu:a100:4(S:0-1)", "MIXED", "16")
    assert (rec.gres[0].count, rec.state, rec.cores_per_socket) == (4, "MIXED", 16)
    assert rec.reason == "bad"  # the reason reads to the next key, as before
    # records split at "\n" only: \r or \x1e inside a record starts no new one
    assert [n.name for n in parse_node_records(line + "\x1eNodeName=ghost State=IDLE\r\n")] == ["a100n1"]


def test_squeue_fields_of_one_job_work_dir_last():
    fmt = squeue_format()
    assert fmt.startswith("JobID:|,State:|,") and fmt.endswith(",WorkDir:|")
    hostile = "/tmp/x|\n5|RUNNING|None|0|1|1|N/A|N/A|batch|normal|0|n1|0:01|0:0|/w"
    out = f"5|COMPLETING|TimeLimit|0|1|1|N/A|2026-12-01T23:35:09|spot|spot|1001|h100n1|0:22|0:15|{hostile}|\n"
    rec = parse_squeue_job(out, 5)
    assert rec is not None and rec["WorkDir"] == hostile and len(rec) == len(SQUEUE_FIELDS)
    assert (rec["JobState"], rec["Reason"], rec["PreemptTime"], rec["StartTime"], rec["UserId"]) == (
        "COMPLETING", "TimeLimit", "None", "2026-12-01T23:35:09", "1001")
    assert parse_squeue_job(out, 55) is None and parse_squeue_job("", 5) is None
    job = job_state_of(5, rec)
    assert (job.state, job.exit_code, job.exit_signal) == ("COMPLETING", 0, 15)
    assert parse_squeue_job("5|FAILED|NonZeroExitCode|0|1|1|N/A|N/A|b|q|0|n|0:01|768|/w|\n", 5)["ExitCode"] == "3:0"


def test_job_gres_of_a_forged_comment_is_the_jobs_own():
    (job,) = [j for j in _read("24.11").jobs if j.fields["JobName"] == "shape5"]
    g = job_gres(job)
    assert (g.state, g.partition, g.num_nodes) == ("RUNNING", "batch", 1)
    assert [(n, [(x.gres_type, x.count, sorted(x.idx or ())) for x in gres]) for n, gres in g.held] == [
        ("a100n1", [("a100", 1, [2])])]


@pytest.mark.parametrize("release, unlimited", [("22.05", None),
                                                ("24.11", {"set": False, "infinite": True, "number": 0})])
def test_an_unlimited_time_limit_in_both_dialects(release, unlimited):
    """``scontrol update jobid=N timelimit=UNLIMITED`` (measured): 22.05 writes null, 24.11 "infinite"."""
    doc = json.loads((DATA / f"squeue-{release}.json").read_text())
    doc["jobs"][0]["time_limit"] = unlimited
    assert read_jobs(json.dumps(doc)).jobs[0].fields["TimeLimit"] == "UNLIMITED"
    del doc["jobs"][0]["time_limit"]
    assert "TimeLimit" not in read_jobs(json.dumps(doc)).jobs[0].fields


def test_sacct_rows_end_at_a_line_feed_only():
    from slurm_gpu.slurm.sacct import parse_sacct

    rows = parse_sacct("JobID|AdminComment\r\n1|a\u2028b\x1ec\x85d\rx\n2|y\n")
    assert rows == [{"JobID": "1", "AdminComment": "a\u2028b\x1ec\x85d\rx"}, {"JobID": "2", "AdminComment": "y"}]


def test_what_2605_and_2511_print_that_earlier_releases_did_not():
    """26.05.5's node GresUsed marks a GPU held whole ``-/4`` (measured); 25.11's EXPEDITING (docs) is a state
    flag that keeps the job active; v0.0.43+ gives the expanded output path beside the pattern (measured)."""
    from slurm_gpu.slurm.records import ACTIVE_STATES, parse_gres_counts

    item = parse_gres_counts("gpu:h100:5(IDX:1-3,5-6),shard:h100:7(3/4,-/4,-/4,-/4,4/4,-/4,-/4,0/4)")[1]
    assert item.shares == ((3, 4), (4, 4), (4, 4), (4, 4), (4, 4), (4, 4), (4, 4), (0, 4)) and item.count == 7
    assert parse_gres_counts("shard:h100:1(x/4)")[0].shares is None
    job = {"job_id": 5, "job_state": ["PENDING", "EXPEDITING"], "batch_flag": True,
           "standard_output": "/w/a\\\\b-%j.out", "stdout_expanded": "/w/a\\b-5.out"}
    read = read_jobs(json.dumps({"meta": {"plugin": {"data_parser": "data_parser/v0.0.45"}}, "jobs": [job]}))
    assert read.problems == () and read.jobs[0].fields["JobState"] == "EXPEDITING" and "EXPEDITING" in ACTIVE_STATES
    assert read.jobs[0].fields["StdOut"] == "/w/a\\b-5.out"
