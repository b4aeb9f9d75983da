# SPDX-License-Identifier: Apache-2.0
"""Heterogeneous jobs: every component classified on its own, the job-level rules (GPU jobs only,
the per-user GPU cap summed over components) on the job as a whole; the generated Lua, fed the
components one at a time as slurmctld does (het_job_offset 0, 1, ...; the script on component 0 only),
decides the same (slurm_gpu.policy.classifier.hetjob). The lab test is test_hetjob_lab.py."""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_gpu.errors import SlurmGpuError
from slurm_gpu.policy import classify_job, job_verdict, load_policy
from slurm_gpu.request import Decision
from slurm_gpu.slurm.job_desc import ModelGap, job_descs_for, strip_interactive
from slurm_gpu.slurm.sbatch.parse import parse_submission
from slurm_gpu.slurm.sbatch.to_request import to_job_request

pytest.importorskip("lupa.lua51")
from tests.job_submit.lua_harness import USER, Plugin  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
UNI = load_policy(str(ROOT / "examples" / "policies" / "university.yaml"))
POLICIES = sorted(p.stem for p in (ROOT / "examples" / "policies").glob("*.yaml") if p.stem != "smallgroup-hardware")
VERSIONS = ((22, 5, 8), (24, 11, 5))


def python_job(argv: list[str], version: tuple[int, int, int], policy: Any
               ) -> tuple[tuple[Decision, ...], list[dict[str, Any]]]:
    """gpusub's decisions for every component, and the job_descs slurmctld hands the plugin (the batch
    script on component 0 only, as sbatch sends it)."""
    tool, args = posixpath.basename(argv[0]), list(argv[1:])
    descs = job_descs_for(argv, version)
    if tool != "sbatch":
        args = strip_interactive(args)
    sub = parse_submission(args, {}, None, version=version)
    parts = len(sub.components)
    requests = [to_job_request(sub, user=USER, component=k)._replace(interactive=tool != "sbatch")
                for k in range(parts)]
    for k, d in enumerate(descs):
        d["user_name"] = USER
        d["script"] = "#!/bin/sh\ntrue\n" if tool == "sbatch" and k == 0 else None
    return classify_job(requests, policy), descs


def lua_job(plugin: Plugin, descs: list[dict[str, Any]]) -> tuple[bool, str | None, list[dict[str, Any]]]:
    """slurm_job_submit on each component in order, stopping at the first refusal, as slurmctld does:
    (accepted, the message logged to the user, the job_descs as the plugin left them)."""
    after = []
    for jd in descs:
        rc, out, log = plugin.submit(jd)
        if rc != 0:
            return False, next(text for kind, text in log if kind == "user"), after
        after.append(out)
    return True, None, after


def verdict_of(policy: Any, decisions: tuple[Decision, ...]) -> tuple[bool, str | None]:
    v = job_verdict(decisions)
    return v.accepted, None if v.accepted else f"slurm-gpu policy {policy.name}: {v.message}"


def both(argv: list[str], policy: Any = UNI, version: tuple[int, int, int] = (22, 5, 8)
         ) -> tuple[tuple[Decision, ...], tuple[bool, str | None, list[dict[str, Any]]]]:
    decisions, descs = python_job(argv, version, policy)
    return decisions, lua_job(Plugin(policy), descs)


SB = ["sbatch", "--hold"]


def test_cpu_part_then_gpu_part_is_a_gpu_job():
    """The bug: a CPU-only first component (60 min: no CPU-only class) and a GPU second one."""
    decisions, (ok, msg, after) = both([*SB, "-t60", "-n1", ":", "-t60", "--gpus=h100:1", "job.sh"])
    assert [d.accepted for d in decisions] == [True, True]
    assert decisions[0].job_class is None and decisions[0].added_options == ()  # nothing added
    assert decisions[1].job_class == "production" and decisions[1].partition == "batch"
    assert ok and msg is None
    assert after[0].get("partition") is None and after[0].get("qos") is None  # the CPU part: unchanged
    assert after[1]["partition"] == "batch" and after[1]["qos"] == "normal"


def test_gpu_part_first():
    decisions, (ok, _, after) = both([*SB, "-t60", "--gpus=a100:2", ":", "-t60", "-n4", "job.sh"])
    assert [d.accepted for d in decisions] == [True, True] and decisions[1].job_class is None
    assert ok and after[0]["partition"] == "batch" and after[1].get("partition") is None


def test_cpu_only_hetjob_is_refused_as_a_cpu_only_job():
    msg = UNI.message("no_class")
    decisions, (ok, lua_msg, _) = both([*SB, "-t60", "-n1", ":", "-t60", "-n2", "job.sh"])
    assert not decisions[0].accepted and decisions[0].message == msg
    assert not ok and lua_msg.startswith(f"slurm-gpu policy {UNI.name}: {msg}")
    # a short CPU-only second component fits the debug class on its own; the job is still CPU-only
    decisions, (ok, lua_msg, _) = both([*SB, "-t60", "-n1", ":", "-t10", "-n2", "job.sh"])
    assert not job_verdict(decisions).accepted and decisions[1].accepted and not ok


def test_short_cpu_parts_fit_a_class_on_their_own():
    decisions, (ok, _, after) = both([*SB, "-t10", "-n1", ":", "-t10", "-n2", "job.sh"])
    assert [d.job_class for d in decisions] == ["debug", "debug"] and ok
    assert [a["partition"] for a in after] == ["interactive", "interactive"]


def test_gpu_part_third_after_two_cpu_parts_is_refused_in_both():
    """The plugin never learns how many components follow: a CPU part that fits no class waits for the
    second component only. gpusub decides the same, with a fix that says so."""
    decisions, (ok, lua_msg, _) = both([*SB, "-t60", "-n1", ":", "-t60", "-n1", ":", "-t60", "--gpus=h100:1",
                                        "job.sh"])
    assert not decisions[0].accepted and decisions[0].key == "no_class"
    assert not ok and UNI.message("no_class") in lua_msg
    decisions, (ok, _, _) = both([*SB, "-t60", "--gpus=h100:1", ":", "-t60", "-n1", ":", "-t60", "-n1", "job.sh"])
    assert all(d.accepted for d in decisions) and ok


def test_two_gpu_types_each_typed_on_its_own():
    decisions, (ok, _, after) = both([*SB, "-t60", "--gpus=h100:1", ":", "-t60", "--gres=gpu:a100:2", "job.sh"])
    assert [d.gres for d in decisions] == ["gpu:h100:1", "gpu:a100:2"] and ok
    untyped = both([*SB, "-t60", "--gpus=1", "-p", "mig", ":", "-t60", "--gpus=h100:1", "job.sh"])
    assert untyped[0][0].gpu_type == "a100" and untyped[0][1].gpu_type == "h100"  # mig's default type, as given
    assert untyped[1][0] and untyped[1][2][0]["tres_per_job"].endswith("gpu:a100:1")


def test_a_component_the_policy_refuses_refuses_the_job():
    decisions, (ok, lua_msg, _) = both([*SB, "-t60", "-n1", ":", "-t60", "--gpus=v100:1", "job.sh"])
    assert decisions[1].key == "unknown_gpu_type" and not ok and decisions[1].message in lua_msg


def test_per_user_cap_is_summed_over_components():
    """QOS normal: max_gpus_per_job 8, max_gpus_per_user 16. 8 + 8 fits, 8 + 8 + 8 does not; each
    component alone is within the per-job limit."""
    ok8 = [*SB, "-t60", "--gpus=h100:8"]
    decisions, (ok, _, _) = both([*ok8, ":", "-t60", "--gpus=h100:8", "job.sh"])
    assert all(d.accepted for d in decisions) and ok
    decisions, (ok, lua_msg, _) = both([*ok8, ":", "-t60", "--gpus=h100:8", ":", "-t60", "--gpus=h100:8", "job.sh"])
    assert [d.accepted for d in decisions] == [True, True, False] and decisions[2].key == "over_user_cap"
    assert "24 GPUs" in decisions[2].message and not ok and decisions[2].message in lua_msg


def test_sessions_stay_sessions_in_every_component():
    """salloc: no script in any component; sbatch: a script on component 0 only. The Lua takes the kind
    of job from component 0 (the interactive class matches salloc's components, never sbatch's)."""
    decisions, (ok, _, after) = both(["salloc", "--no-shell", "-t60", "--gpus=h100:1", ":", "-t60",
                                      "--gpus=a100:1"])
    assert [d.job_class for d in decisions] == ["interactive", "interactive"] and ok
    assert [a["partition"] for a in after] == ["interactive", "interactive"]
    decisions, (ok, _, after) = both([*SB, "-t60", "--gpus=h100:1", ":", "-t60", "--gpus=a100:1", "job.sh"])
    assert [d.job_class for d in decisions] == ["production", "production"]
    assert [a["partition"] for a in after] == ["batch", "batch"]


PARTS = ["-n1", "-n4", "-c2", "--gpus=h100:1", "--gpus=1", "--gpus=a100:2", "--gres=gpu:1", "--gres=gpu:h100:8",
         "--gpus-per-node=a100:4", "--gpus=h100:8", "--gres=gpu:a100_1g.10gb:1", "--gpus=v100:1", "--gres=mps:25",
         "-N2 --gpus-per-node=h100:8"]
TIMES = ["-t10", "-t60", "-t20:00:00", "-t3-00:00:00", ""]
WHERE = ["", "", "-p batch", "-p interactive", "-p mig", "-p spot", "--qos=debug", "--qos=high", "-A hpc-priority"]


@st.composite
def hetjob_lines(draw: st.DrawFn) -> list[str]:
    tool = draw(st.sampled_from(["sbatch", "sbatch", "salloc"]))
    out = ["sbatch", "--hold"] if tool == "sbatch" else ["salloc", "--no-shell"]
    for k in range(draw(st.integers(2, 3))):
        if k:
            out.append(":")
        for piece in (draw(st.sampled_from(PARTS)), draw(st.sampled_from(TIMES)), draw(st.sampled_from(WHERE))):
            out += piece.split()
    return [*out, "job.sh"] if tool == "sbatch" else out


@pytest.mark.parametrize("policy_name", POLICIES)
def test_lua_decides_hetjobs_as_the_python_classifier(policy_name: str) -> None:
    """Differential: the job's verdict and message, and each accepted component's partition and QOS as
    the plugin wrote them, on 22.05's and 24.11's job_desc."""
    policy = load_policy(str(ROOT / "examples" / "policies" / f"{policy_name}.yaml"))
    plugin = Plugin(policy)
    seen = {"accepted": 0, "rejected": 0, "cpu part": 0}

    @settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(argv=hetjob_lines())
    def check(argv: list[str]) -> None:
        for version in VERSIONS:
            try:
                decisions, descs = python_job(argv, version, policy)
            except (ValueError, SlurmGpuError, ModelGap):
                continue
            given_parts = [jd.get("partition") for jd in descs]
            given_qos = [jd.get("qos") for jd in descs]
            ok, msg, after = lua_job(plugin, descs)
            want_ok, want_msg = verdict_of(policy, decisions)
            assert ok == want_ok, f"{' '.join(argv)} on {version}: Lua {ok} {msg} != Python {want_ok} {want_msg}"
            if not ok:
                assert msg is not None and want_msg is not None and msg.startswith(want_msg), (argv, msg, want_msg)
                seen["rejected"] += 1
                continue
            seen["accepted"] += 1
            for k, d in enumerate(decisions):
                if d.job_class is None:  # the CPU part of a GPU job: nothing added
                    seen["cpu part"] += 1
                    assert (after[k].get("partition"), after[k].get("qos")) == (given_parts[k], given_qos[k]), argv
                else:
                    assert after[k].get("partition") == d.partition and after[k].get("qos") == d.qos, (argv, k)

    check()
    assert seen["accepted"] and seen["rejected"], seen
    if policy_name == "university":
        assert seen["cpu part"], seen


def test_calls_of_other_submissions_between_two_components():
    """Another RPC's slurm_job_submit may come between two components (slurmctld holds only a read
    lock over the loop): a plain job, or another user's hetjob, does not change what the plugin keeps
    of this one; a component that does not continue what it kept is classified alone."""
    plugin = Plugin(UNI)
    _, mine = python_job([*SB, "-t60", "-n1", ":", "-t60", "-n1", "job.sh"], (22, 5, 8), UNI)  # CPU-only
    _, other = python_job([*SB, "-t60", "--gpus=h100:1", ":", "-t60", "-n1", "job.sh"], (22, 5, 8), UNI)
    _, plain = python_job([*SB, "-t60", "--gpus=h100:1", "job.sh"], (22, 5, 8), UNI)
    assert plugin.submit(mine[0], uid=1001)[0] == 0  # pending: the second component decides
    assert plugin.submit(plain[0], uid=1001)[0] == 0
    assert plugin.submit(other[0], uid=1002)[0] == 0
    rc, _, log = plugin.submit(mine[1], uid=1001)
    assert rc != 0 and any(UNI.message("no_class") in text for kind, text in log if kind == "user")
    assert plugin.submit(other[1], uid=1002)[0] == 0  # the other user's CPU part of a GPU job
    rc, _, _ = plugin.submit(mine[1], uid=1001)  # offset 1 with nothing kept: classified alone
    assert rc == 0  # (a session-like component without a script: the interactive class takes it)
