# SPDX-License-Identifier: Apache-2.0
"""The controller-side hook's decision table (pure): hand-written job facts, markers and policy.

The job records are shaped as measured on Slurm 22.05.8 inside a real EpilogSlurmctld (docs/checkpointing.md,
"The controller-side hook"): JobState=COMPLETING whatever the end, the end in Reason/PreemptTime, and Restarts
one above SLURM_JOB_RESTART_COUNT when Slurm or the job requeued it already.
"""

from __future__ import annotations

import pytest

from slurm_gpu.checkpoint.markers import Marker
from slurm_gpu.node.requeue import MISSING, CkptView, JobFacts, PolicyFacts, cause_of, decide, facts_from

START = 1_800_000_000.0
POLICY = PolicyFacts(max_requeues=3, checkpoint_partitions=frozenset({"spot"}))


def job(**kw: object) -> JobFacts:
    base: dict[str, object] = dict(job_id=42, uid=1001, env_restarts=0, partition="spot", work_dir="/w/u",
                                   state="COMPLETING", reason="None", restarts=0, preempted=True, start_s=START)
    base.update(kw)
    return JobFacts(**base)  # type: ignore[arg-type]


def marker(step: int, t: float, rank: int = 0, world: int = 1, restart: int = 0, job_id: str | None = "42") -> Marker:
    return Marker(step=step, path=f"/ck/{step}", rank=rank, world_size=world, time=t, job_id=job_id,
                  restart_count=restart)


FRESH = CkptView(exists=True, markers=(marker(5, START + 60),))


@pytest.mark.parametrize("facts, cause", [
    (job(), "preemption"),
    (job(preempted=False, reason="NodeDown"), "node-failure"),
    (job(preempted=False, reason="TimeLimit"), "time-limit"),
    (job(state="PREEMPTED", preempted=False), "preemption"),  # a release that shows the base state
    (job(state="NODE_FAIL", preempted=False), "node-failure"),
    (job(state="TIMEOUT", preempted=False), "time-limit"),
    (job(preempted=False, reason="None"), None),  # cancelled or completed
    (job(preempted=False, reason="NonZeroExitCode"), None),  # the payload failed
    (job(state="CANCELLED", preempted=False), None),
    (job(restarts=1), None),  # requeued already (Slurm's REQUEUE preemption, --requeue node failure, itself)
    (job(state="PENDING"), None),
    (job(state="REQUEUED"), None),
    (job(env_restarts=None), None),  # cannot tell
    (job(state="", restarts=None), None),  # no record
])
def test_cause(facts: JobFacts, cause: str | None) -> None:
    assert cause_of(facts)[0] == cause


def test_node_failure_fresh_marker_below_max_requeues() -> None:
    d = decide(job(preempted=False, reason="NodeDown", env_restarts=1, restarts=1), POLICY, FRESH)
    assert (d.action, d.cause, d.restarts) == ("requeue", "node-failure", 1)
    assert d.step is not None and d.step.step == 5
    assert "restart 2 of at most 3" in d.reason and "/ck/5" in d.reason


def test_no_marker_leaves_with_reason() -> None:
    d = decide(job(), POLICY, CkptView(exists=True))
    assert d.action == "leave" and "no complete checkpoint marker" in d.reason


def test_stale_marker_older_than_the_run_leaves() -> None:
    d = decide(job(), POLICY, CkptView(exists=True, markers=(marker(7, START - 1),)))
    assert d.action == "leave" and "older than this run's start" in d.reason and "step 7" in d.reason


def test_unknown_start_time_is_not_fresh() -> None:
    assert decide(job(start_s=None), POLICY, FRESH).action == "leave"


@pytest.mark.parametrize("env_restarts, marked, action", [(2, 0, "requeue"), (3, 0, "leave"), (0, 3, "leave"),
                                                          (5, 0, "leave")])
def test_restarts_at_max_leave(env_restarts: int, marked: int, action: str) -> None:
    view = CkptView(exists=True, markers=(marker(5, START + 60, restart=marked),))
    d = decide(job(env_restarts=env_restarts, restarts=env_restarts), POLICY, view)
    assert d.action == action
    if action == "leave":
        assert "max_requeues=3" in d.reason


def test_requeued_already_does_nothing() -> None:
    d = decide(job(restarts=1), POLICY, FRESH)
    assert d.action == "none" and "requeued already" in d.reason


def test_non_checkpoint_job_does_nothing() -> None:
    d = decide(job(partition="batch"), POLICY, CkptView(problem=MISSING))
    assert d.action == "none" and d.cause == "preemption"


def test_checkpoint_partition_without_directory_leaves() -> None:
    d = decide(job(), POLICY, CkptView(problem=MISSING))
    assert d.action == "leave" and "no checkpoint directory" in d.reason and "/w/u/.gpusub-ckpt/42" in d.reason


def test_protocol_job_in_any_partition_is_requeued() -> None:  # gpusub --checkpoint outside the spot class
    assert decide(job(partition="batch"), POLICY, FRESH).action == "requeue"


def test_hostile_directory_leaves_even_outside_checkpoint_partitions() -> None:
    d = decide(job(partition="batch"), POLICY, CkptView(problem="/w/u/.gpusub-ckpt is a symlink"))
    assert d.action == "leave" and "symlink" in d.reason


def test_no_policy_leaves() -> None:
    d = decide(job(), None, FRESH)
    assert d.action == "leave" and "no site policy" in d.reason


def test_no_requeue_flag_leaves() -> None:
    d = decide(job(requeue=False), POLICY, FRESH)
    assert d.action == "leave" and "--no-requeue" in d.reason


def test_incomplete_step_does_not_count() -> None:
    view = CkptView(exists=True, markers=(marker(9, START + 90, rank=0, world=2), marker(8, START + 80)))
    d = decide(job(), POLICY, view)
    assert d.action == "requeue" and d.step is not None and d.step.step == 8


def test_markers_of_another_job_do_not_count() -> None:
    view = CkptView(exists=True, markers=(marker(9, START + 90, job_id="41"),))
    assert decide(job(), POLICY, view).action == "leave"


def test_facts_from_the_measured_environment_and_record() -> None:
    env = {"SLURM_JOB_ID": "14", "SLURM_JOB_UID": "1001", "SLURM_JOB_RESTART_COUNT": "0",
           "SLURM_JOB_PARTITION": "spot", "SLURM_JOB_WORK_DIR": "/tmp/w", "SLURM_SCRIPT_CONTEXT": "epilog_slurmctld"}
    record = {"JobId": "14", "JobState": "COMPLETING", "Reason": "None", "Requeue": "1", "Restarts": "0",
              "BatchFlag": "1", "PreemptTime": "2026-12-01T01:18:18", "StartTime": "2026-12-01T01:17:43"}
    f = facts_from(env, record, START)
    assert f is not None
    assert (f.job_id, f.uid, f.partition, f.preempted, f.ckpt_dir) == (14, 1001, "spot", True, "/tmp/w/.gpusub-ckpt/14")
    assert cause_of(f)[0] == "preemption"


@pytest.mark.parametrize("env", [{}, {"SLURM_JOB_ID": "x", "SLURM_JOB_UID": "1"}, {"SLURM_JOB_ID": "1"},
                                 {"SLURM_JOB_ID": "9" * 40, "SLURM_JOB_UID": "1"}])
def test_facts_from_garbage_environment_is_none(env: dict[str, str]) -> None:
    assert facts_from(env, {}, None) is None


def test_record_of_another_job_is_ignored() -> None:
    env = {"SLURM_JOB_ID": "14", "SLURM_JOB_UID": "1001", "SLURM_JOB_RESTART_COUNT": "0"}
    f = facts_from(env, {"JobId": "15", "JobState": "COMPLETING", "Restarts": "0", "PreemptTime": "x"}, START)
    assert f is not None and f.state == "" and cause_of(f)[0] is None


def test_relative_work_dir_has_no_checkpoint_dir() -> None:
    assert job(work_dir="rel/dir").ckpt_dir is None


def test_lab_writes_epilog_slurmctld_only_when_given() -> None:
    from slurm_gpu.lab.config import _hook_lines
    from slurm_gpu.lab.spec import LabHooks

    assert _hook_lines(LabHooks(epilog_slurmctld="/h/epilog-ctld"), "/x") == ["EpilogSlurmctld=/h/epilog-ctld"]
    assert not any(line.startswith("EpilogSlurmctld") for line in _hook_lines(LabHooks(prolog="/p"), "/x"))


def test_lab_node_hooks_wire_the_controller_side_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    from slurm_gpu.lab.nodehooks import ENV_CTLD_SWITCH, wire
    from slurm_gpu.lab.spec import LabHooks

    monkeypatch.delenv(ENV_CTLD_SWITCH, raising=False)
    assert wire(LabHooks(node_hooks=True), "/lab").epilog_slurmctld == "/lab/node-hooks/epilog_ctld.sh"
    assert wire(LabHooks(node_hooks=True, epilog_slurmctld="/mine"), "/lab").epilog_slurmctld == "/mine"
    assert wire(LabHooks(), "/lab").epilog_slurmctld is None  # no node hooks: no hook of ours
    monkeypatch.setenv(ENV_CTLD_SWITCH, "0")
    assert wire(LabHooks(node_hooks=True), "/lab").epilog_slurmctld is None


# A preempted job its stop signal killed before its script's trap (measured on 22.05.8 in the lab: FAILED,
# ExitCode 0:12, Reason=JobLaunchFailure, PreemptTime set, SLURM_JOB_EXIT_CODE2=0:12 in EpilogSlurmctld).
EARLY = PolicyFacts(max_requeues=3, checkpoint_partitions=frozenset({"spot"}),
                    requeue_partitions=frozenset({"spot"}))
KILLED_ENV = {"SLURM_JOB_ID": "7", "SLURM_JOB_UID": "1001", "SLURM_JOB_RESTART_COUNT": "0",
              "SLURM_JOB_PARTITION": "spot", "SLURM_JOB_WORK_DIR": "/tmp/w", "SLURM_JOB_EXIT_CODE": "12",
              "SLURM_JOB_EXIT_CODE2": "0:12", "SLURM_SCRIPT_CONTEXT": "epilog_slurmctld"}
KILLED_RECORD = {"JobId": "7", "JobState": "COMPLETING", "Reason": "JobLaunchFailure", "Requeue": "1",
                 "Restarts": "0", "BatchFlag": "1", "PreemptTime": "2026-12-02T05:54:17",
                 "StartTime": "2026-12-02T05:54:15", "ExitCode": "0:12"}


def test_killed_at_start_facts_from_the_measured_environment_and_record() -> None:
    f = facts_from(KILLED_ENV, KILLED_RECORD, START)
    assert f is not None and (f.exit_signal, cause_of(f)[0]) == (12, "preemption")


def test_killed_at_start_without_directory_is_requeued() -> None:
    d = decide(job(exit_signal=12), EARLY, CkptView(problem=MISSING))
    assert (d.action, d.cause, d.restarts, d.step) == ("requeue", "preemption", 0, None)
    assert "killed by SIGUSR2 (ExitCode 0:12) before its script's trap" in d.reason
    assert "restart 1 of at most 3" in d.reason and "it starts over" in d.reason


def test_killed_at_start_resumes_from_an_older_checkpoint() -> None:
    stale = CkptView(exists=True, markers=(marker(4, START - 600, restart=1),))
    d = decide(job(exit_signal=12, env_restarts=1), EARLY, stale)
    assert d.action == "requeue" and d.step is not None and d.step.step == 4 and "restart 2 of at most 3" in d.reason


@pytest.mark.parametrize("facts, view, policy, action, words", [
    (job(exit_signal=12, env_restarts=3), CkptView(problem=MISSING), EARLY, "leave", "max_requeues=3"),
    (job(exit_signal=12), CkptView(problem=MISSING, markers=()), EARLY, "requeue", ""),
    (job(exit_signal=12), CkptView(exists=True, markers=(marker(1, START - 9, restart=3),)), EARLY, "leave",
     "restarted 3 times"),
    (job(exit_signal=12), CkptView(problem="is a symlink"), EARLY, "leave", "is a symlink"),
    (job(exit_signal=12, requeue=False), CkptView(problem=MISSING), EARLY, "leave", "--no-requeue"),
    (job(exit_signal=12, batch=False), CkptView(problem=MISSING), EARLY, "leave", "not a batch job"),
    # TERM and KILL are Slurm's own kills (grace end, cancel): the old rule (a fresh marker) holds
    (job(exit_signal=15), CkptView(problem=MISSING), EARLY, "leave", "no checkpoint directory"),
    (job(exit_signal=9), CkptView(problem=MISSING), EARLY, "leave", "no checkpoint directory"),
    (job(exit_signal=0), CkptView(problem=MISSING), EARLY, "leave", "no checkpoint directory"),
    # not a preemption (no PreemptTime): a job that signalled itself, or was signalled by its user
    (job(exit_signal=12, preempted=False), CkptView(problem=MISSING), EARLY, "none", "ended on its own"),
    # a partition the policy does not make preemptible (PreemptMode=REQUEUE)
    (job(exit_signal=12, partition="batch"), CkptView(problem=MISSING), EARLY, "none", "not a checkpointing job"),
    (job(exit_signal=12), CkptView(problem=MISSING), POLICY, "leave", "no checkpoint directory"),
    (job(exit_signal=12), CkptView(problem=MISSING), None, "none", "not a checkpointing job"),
    (job(exit_signal=10), CkptView(problem=MISSING), EARLY, "requeue", "SIGUSR1"),
    (job(exit_signal=12, state="FAILED"), CkptView(problem=MISSING), EARLY, "requeue", ""),  # a release's base state
    (job(exit_signal=12, restarts=1), CkptView(problem=MISSING), EARLY, "none", "requeued already"),
])
def test_killed_at_start_rules(facts: JobFacts, view: CkptView, policy: PolicyFacts | None, action: str,
                               words: str) -> None:
    d = decide(facts, policy, view)
    assert d.action == action and words in d.reason, d


@pytest.mark.parametrize("env_code, record_code, signal", [
    ("0:12", "0:12", 12), ("0:12", None, 12), (None, "0:12", 12), ("0:12", "0:15", None), ("0:x", None, None),
    ("12", None, None),  # the wait status form: not read (SLURM_JOB_EXIT_CODE2 is RC:SIG)
    ("1:0", "1:0", 0),
])
def test_exit_signal_from_env_and_record_must_agree(env_code: str | None, record_code: str | None,
                                                    signal: int | None) -> None:
    env = {k: v for k, v in KILLED_ENV.items() if k != "SLURM_JOB_EXIT_CODE2"}
    if env_code is not None:
        env["SLURM_JOB_EXIT_CODE2"] = env_code
    record = {k: v for k, v in KILLED_RECORD.items() if k != "ExitCode"}
    if record_code is not None:
        record["ExitCode"] = record_code
    f = facts_from(env, record, START)
    assert f is not None and f.exit_signal == signal


def test_policy_facts_name_the_preemptible_partitions() -> None:
    from slurm_gpu.lab.control import default_policy_path
    from slurm_gpu.node.requeue import policy_facts
    from slurm_gpu.policy.load import load_policy

    facts = policy_facts(load_policy(default_policy_path()))
    assert facts.requeue_partitions == frozenset({"spot"}) and facts.checkpoint_partitions == frozenset({"spot"})
