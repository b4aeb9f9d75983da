# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu why``'s decision on recorded lab texts (pure; no Slurm): each blocker, the limit and by
how much, the alternatives computed by hand from the recorded nodes, and the same answers from 24.11's
spellings of the same records."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurm_gpu.cli.main import cli
from slurm_gpu.cluster.why import ask_of, explain, node_of, parse_qos, parse_records
from slurm_gpu.cluster.why_reasons import reason_info
from slurm_gpu.cluster.why_text import lines, to_json
from slurm_gpu.policy import load_policy
from slurm_gpu.slurm.records import parse_kv_line

_spec = importlib.util.spec_from_file_location("why_records", Path(__file__).with_name("why_records.py"))
assert _spec and _spec.loader
rec = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rec)

POLICY = load_policy(str(Path(__file__).resolve().parents[2] / "examples" / "policies" / "university.yaml"))
NODES = parse_records(rec.NODES_22_05, "NodeName")
PARTS = parse_records(rec.PARTITIONS_22_05, "PartitionName")
QOS = parse_qos(rec.QOS_TEXT)


def jobs(release: str = "22.05") -> list[dict[str, str]]:
    """The recorded jobs as the job reader gives them (fields in scontrol's names and spellings: the
    recorded lines hold no user text, so their key/value pairs are those fields)."""
    text = rec.JOBS_22_05 if release == "22.05" else "\n".join(map(rec.spelled_24_11, rec.JOBS_22_05.splitlines()))
    return [parse_kv_line(line) for line in text.splitlines() if line.startswith("JobId=")]


def why(job_id: str, release: str = "22.05", **changes: str):
    all_jobs = jobs(release)
    job = {**next(j for j in all_jobs if j["JobId"] == job_id), **changes}
    return explain(job, jobs=all_jobs, nodes=NODES, partitions=PARTS, qos=QOS, policy=POLICY)


RELEASES = pytest.mark.parametrize("release", ["22.05", "24.11"])


def test_the_24_11_records_really_use_24_11_spellings():
    text = "\n".join(j.get("ReqTRES", "") + j.get("TresPerJob", "") + j.get("TresPerNode", "") for j in jobs("24.11"))
    assert "gres/gpu:h100:2" in text and "gres:gpu" not in text
    assert all("TRES" not in j for j in jobs("24.11")) and "AllocTRES" in jobs("24.11")[0]


@RELEASES
def test_running_job_is_one_line(release):
    w = why("1195", release)
    assert (w.pending, w.blocker, w.state) == (False, "none", "RUNNING")
    assert lines(w) == ["job 1195 is RUNNING on h100n2: not pending, nothing holds it"]


@RELEASES
def test_held_job(release):
    w = why("1197", release)
    assert (w.blocker, w.reason) == ("held", "JobHeldUser")
    assert (w.ask.gpus, w.ask.gpu_type, w.ask.nodes) == (1, "a100", 1)
    assert "scontrol release 1197" in w.advice[0]
    assert w.alternatives == ()  # a hold is not a resource problem


@RELEASES
def test_dependency_names_the_job_and_its_state(release):
    w = why("1198", release)
    assert (w.blocker, w.reason) == ("dependency", "Dependency")
    assert w.advice == ("waits for job 1197 (afterok), which is PENDING (JobHeldUser)",)


@RELEASES
def test_qos_gpu_limit_per_user_and_how_far_over(release):
    w = why("1196", release)
    assert (w.blocker, w.reason) == ("qos_gpu_limit", "QOSMaxGRESPerUser")
    lim = w.limit
    # debug: MaxTRESPU gres/gpu=2 (QOS_TEXT); 1195 (RUNNING, labuser, debug) holds 2; 1196 asks 2
    assert (lim.source, lim.name, lim.field, lim.what) == ("qos", "debug", "MaxTRESPerUser", "gres/gpu")
    assert (lim.limit, lim.in_use, lim.requested, lim.over_by) == (2, 2, 2, 2)
    assert w.alternatives == ()  # no room left under the QOS
    # interactive admits debug and normal; normal allows 16 per user and labuser holds none there
    assert any(a.endswith("--qos=normal") for a in w.advice)


def test_a_typed_qos_limit_caps_only_its_type():
    all_jobs = jobs()
    job = next(j for j in all_jobs if j["JobId"] == "1196")
    typed = parse_qos(rec.QOS_TEXT.replace("debug|gres/gpu=2|", "debug|gres/gpu:h100=2|"))
    w = explain(job, jobs=all_jobs, nodes=NODES, partitions=PARTS, qos=typed, policy=POLICY)
    assert (w.limit.what, w.limit.limit, w.limit.in_use, w.limit.over_by) == ("gres/gpu:h100", 2, 2, 2)
    # h100: no room under the limit; a100 is not capped by it: a100n1 has 3 free, 28 CPUs, but
    # 512000-409600 = 102400 MB for 61440 MB per GPU -> 1 a100
    assert [(a.gpus, a.gpu_type, a.options) for a in w.alternatives] == [(1, "a100", ("--gpus=a100:1",))]


def test_qos_limit_falls_back_to_the_policy_without_accounting():
    all_jobs = jobs()
    job = next(j for j in all_jobs if j["JobId"] == "1196")
    w = explain(job, jobs=all_jobs, nodes=NODES, partitions=PARTS, qos=None, policy=POLICY)
    assert (w.limit.source, w.limit.limit, w.limit.over_by) == ("policy", 2, 2)


@RELEASES
def test_qos_gpu_limit_per_job(release):
    w = why("1196", release, Reason="QOSMaxGRESPerJob", TRES="cpu=1,gres/gpu=3,gres/gpu:h100=3",
            ReqTRES="cpu=1,gres/gpu=3,gres/gpu:h100=3")
    assert (w.limit.field, w.limit.limit, w.limit.requested, w.limit.over_by) == ("MaxTRESPerJob", 2, 3, 1)
    # capped at 2 GPUs; h100n2 has 5 h100, 20 CPUs, 320 GiB free (recorded): 2 x (4 CPUs, 60 GiB) fit
    assert [a.options for a in w.alternatives][0] == ("--gpus=h100:2",)


@RELEASES
def test_resources_start_estimate_and_what_starts_now(release):
    w = why("1199", release)
    assert (w.blocker, w.reason) == ("resources", "Resources")
    assert (w.start_estimate, w.sched_nodes) == ("2026-12-01T01:05:57", "h100n[1-2]")
    assert (w.ask.gpus, w.ask.nodes, w.ask.per_node, w.ask.cpus_per_gpu, w.ask.mem_per_gpu_mb) == (16, 2, 8, 4, 61440)
    # by hand from NODES_22_05: h100n1 has 3 h100 free but CPUAlloc=32 of 32 (none usable);
    # h100n2 5 h100 free, 20 CPUs, 512000-184320 MB: 5 x 4 CPUs, 5 x 61440 MB fit -> 5 h100 on one node;
    # a100n1 3 a100 free, 28 CPUs, 512000-409600=102400 MB: one 61440 MB share -> 1 a100
    got = [(a.gpus, a.gpu_type, a.nodes, a.options) for a in w.alternatives]
    assert got == [(5, "h100", ("h100n2",), ("--gpus=h100:5",)), (1, "a100", ("a100n1",), ("--gpus=a100:1",))]
    assert w.free_now == {"a100": {"a100n1": 3}, "h100": {"h100n1": 3, "h100n2": 5}}
    assert w.could_run_on == ("h100n1", "h100n2")


@RELEASES
def test_partition_time_limit(release):
    w = why("1197", release, Reason="PartitionTimeLimit", Partition="interactive", TimeLimit="05:00:00")
    assert w.blocker == "partition_time_limit"
    assert (w.limit.source, w.limit.field, w.limit.limit, w.limit.requested, w.limit.over_by) == (
        "partition", "MaxTime", 240, 300, 60)
    assert "--time=04:00:00" in w.advice[0] and w.advice[1].endswith("--partition=batch")
    assert w.alternatives == ()  # no other GPU request helps a time over the limit


def test_qos_wall_limit():
    w = why("1196", Reason="QOSMaxWallDurationPerJobLimit", TimeLimit="01:00:00")
    assert (w.blocker, w.limit.field, w.limit.limit, w.limit.over_by) == ("qos_time_limit", "MaxWall", 30, 30)


@pytest.mark.parametrize("reason,kind,per", [
    ("QOSGrpGRES", "qos_gpu_limit", "group"), ("QOSMaxGRESPerAccount", "qos_gpu_limit", "account"),
    ("QOSMaxGRESPerNode", "qos_gpu_limit", "node"), ("QOSGrpGRESRunMinutes", "qos_gpu_limit", "group"),
    ("AssocGrpGRES", "assoc_limit", "group"), ("AssocMaxJobsLimit", "assoc_limit", ""),
    ("QOSMaxCpuPerUserLimit", "qos_limit", "user"), ("Priority", "priority", ""),
    ("ReqNodeNotAvail, UnavailableNodes:h100n1", "nodes_unavailable", ""), ("JobHeldAdmin", "held", ""),
    ("DependencyNeverSatisfied", "dependency", ""), ("SomethingNew", "other", ""),
])
def test_reason_table(reason, kind, per):
    info = reason_info(reason)
    assert (info.kind, info.per) == (kind, per)
    assert info.text and "  " not in info.text


def test_node_states():
    line = rec.NODES_22_05.splitlines()[2]  # h100n2, MIXED
    assert node_of(parse_records(line, "NodeName")[0]).usable
    for state in ("MIXED+DRAIN", "IDLE*", "DOWN+NOT_RESPONDING", "IDLE~", "ALLOCATED+MAINT"):
        node = node_of(parse_records(line.replace("State=MIXED", f"State={state}"), "NodeName")[0])
        assert not node.usable, state


def test_untyped_request_and_partition_defaults():
    job = {"JobId": "7", "NumNodes": "1", "TRES": "cpu=1,mem=4000M,node=1,billing=1",
           "TresPerNode": "gres/gpu:2", "TimeLimit": "UNLIMITED"}
    ask = ask_of(job, {"JobDefaults": "DefCpuPerGPU=8,DefMemPerGPU=1024"})
    assert (ask.gpus, ask.gpu_type, ask.cpus_per_gpu, ask.mem_per_gpu_mb, ask.time_min) == (2, None, 8, 1024, None)


def test_json_keys_are_the_documented_ones():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "why.md").read_text(encoding="utf-8")
    data = to_json(why("1199"))
    json.dumps(data)
    for key in data:
        assert f"`{key}`" in doc, key


def test_cli_usage_errors_exit_2():
    for bad in ("abc", "-5", "12x", "1" * 30):
        result = CliRunner().invoke(cli, ["why", "--", bad])
        assert result.exit_code == 2, (bad, result.output)


def test_cli_no_slurm_conf_is_one_line_exit_1(tmp_path):
    result = CliRunner().invoke(cli, ["why", "12"], env={"SLURM_CONF": str(tmp_path / "none.conf")})
    assert result.exit_code == 1 and "none.conf: no such file" in result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_26_05_topology_reasons_are_resource_waits_in_their_own_words():
    from slurm_gpu.cluster.why_reasons import TOPOLOGY_REASONS

    assert len(TOPOLOGY_REASONS) == 8  # ESLURM_TOPO_* 7201-7208
    for text, words in TOPOLOGY_REASONS.items():
        info = reason_info(text)
        assert info.kind == "resources" and words in info.text and "topology" in info.text
    assert reason_info("No suitable topology unit found for segment").text != reason_info(
        "No suitable topology unit found").text
