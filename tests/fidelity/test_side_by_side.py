# SPDX-License-Identifier: Apache-2.0
"""Acceptance test for "replace sbatch with gpusub and change nothing else" (issue 8).

Every script of tests/fidelity/scripts is submitted as the lab user twice, ``sbatch SCRIPT`` and ``gpusub
SCRIPT``, with the same command line and the same environment (the stand-in launchers of
tests/fidelity/bin first on PATH, BASH_ENV counting runs of the script itself). Scripts marked ``hold`` are
submitted with ``--hold``, compared, and cancelled; ``run`` scripts run to the end; ``refuse`` scripts must
be refused by both; ``never`` scripts are taken by sbatch but can never start (a QOS or partition limit,
``pends=<Slurm's reason>``): gpusub may refuse them (the policy says why at once) or take them, and then
its job must be the same and wait for the same reason.

Two tests per script:
- ``test_sbatch_matches_manifest``: sbatch's own outcome against the hand-written ``# fidelity-expect:`` line
  (how many times the batch script ran, how many workers each launcher started, nodes, GPUs...). This is
  what proves the harness measures what it claims.
- ``test_gpusub_matches_sbatch``: the gpusub job against the sbatch job, and the batch step's full
  environment (``env -0``, recorded by bin/record-batch.sh) against sbatch's. Allowed to differ: partition,
  QOS (what the policy chose; their SLURM_JOB_* variables with them), placement (node names; which GPUs, not
  how many), job ids and times, gpusub's documented binding variables (harness.ENV_DIFFER), the TRES GPU type
  when the script asked for an untyped GPU, and the time limit when the partitions differ.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import fidelity_harness as harness  # loaded by conftest.py
import pytest

pytestmark = pytest.mark.slurm

CORPUS = harness.load_corpus()
IDS = [s.name for s in CORPUS]
WAIT_S = float(os.environ.get("FIDELITY_WAIT_S", "600"))


@pytest.fixture(scope="module")
def results(request):
    try:
        lab = request.getfixturevalue("slurm_lab")
    except pytest.FixtureLookupError:
        pytest.skip("no slurm_lab fixture (tests/conftest.py)")
    from slurm_gpu.lab.demo import find_gpusub

    gpusub = find_gpusub()
    if gpusub is None:
        pytest.fail("gpusub is not installed in this environment")
    wanted = {item.callspec.params["script"].name for item in request.session.items
              if item.module is request.module and hasattr(item, "callspec")}
    # not under the lab's own directory: a restart of the shared lab would delete it mid-run
    base = tempfile.mkdtemp(prefix="gpusub-fidelity-", dir="/tmp")
    os.chmod(base, 0o755)
    shutil.chown(base, lab.user)
    print(f"\nfidelity work directory: {base}")
    return harness.run_all(lab, gpusub, [s for s in CORPUS if s.name in wanted], base, WAIT_S)


def _report(case) -> str:
    lines = [f"script {case.script.path}", f"work dir {case.workdir}", *([case.rerun] if case.rerun else [])]
    for side in case.sides.values():
        lines.append(side.describe())
        for rec in side.records:
            lines.append("    " + ", ".join(f"{k}={rec[k]}" for k in (*harness.SUMMARY_KEYS, "partition", "qos",
                                                                          "reason", "gpu_types")))
        if side.counts or side.others:
            lines.append(f"    records: {dict(sorted(side.counts.items()))} {side.others}")
        if side.unfinished:
            lines.append(f"    {side.unfinished}")
    return "\n".join(lines)


def _expect_known(request, script, where: str) -> None:
    """A disagreement the header marks as another item's (``# fidelity-known:``): expected to fail, strictly
    (once that work lands, the pass fails the test until the mark is removed)."""
    why = script.known_failure(where)
    if why:
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"known ({where} lab): {why}"))


@pytest.mark.parametrize("script", CORPUS, ids=IDS)
def test_sbatch_matches_manifest(results, script, policy_plugin, request):
    if policy_plugin:
        _expect_known(request, script, "plugin-sbatch")
    case = results[script.name]
    sb = case.sides["sbatch"]
    report = _report(case)
    if script.expect.get("policy") == "refuse" and policy_plugin:
        # the site policy refuses it (gpusub does): with the compiled job_submit.lua, so does plain sbatch,
        # with the policy's message; without the plugin, Slurm takes it as the manifest says below
        assert sb.rc != 0 and "slurm-gpu policy" in sb.err, f"the policy plugin let plain sbatch through\n{report}"
        assert case.sides["gpusub"].rc != 0, report
        return
    if script.mode == "refuse":
        assert sb.rc != 0, f"the manifest says sbatch refuses this script, but it accepted it\n{report}"
        return
    assert sb.rc == 0 and sb.job, f"sbatch refused a script the manifest says it takes\n{report}"
    assert sb.records, f"no scontrol record for sbatch's job\n{report}"
    problems = []
    exp = script.expect
    if "array" in exp:
        got_ids = sorted(i for r in sb.records for i in harness.task_ids(str(r["array"])))
        if tuple(got_ids) != harness.task_ids(exp["array"]):
            problems.append(f"array task ids {got_ids}, manifest {exp['array']}")
    for rec in sb.records:
        for key, field in (("nodes", "nodes"), ("gpus", "gpus"), ("tasks", "tasks"), ("cpus", "cpus"),
                           ("mem", "mem_mb")):
            if key in exp and str(rec[field]) != exp[key]:
                problems.append(f"{key}: sbatch's job has {rec[field]}, manifest {exp[key]}")
    if script.mode == "never":
        reasons = {str(r["reason"]) for r in sb.records}
        if reasons != {exp["pends"]}:
            problems.append(f"sbatch's job pends for {reasons}, manifest {exp['pends']}")
    if script.mode == "run":
        assert not sb.unfinished, f"sbatch's job did not finish in time\n{report}"
        states = {str(r["state"]) for r in sb.records}
        if states != {"COMPLETED"}:
            problems.append(f"sbatch's job ended {states}")
        want = harness.expected_counts(script)
        if sb.counts != want:
            problems.append(f"records {dict(sorted(sb.counts.items()))}, manifest {dict(sorted(want.items()))}")
    assert not problems, "\n".join(problems) + "\n" + report


@pytest.mark.parametrize("script", CORPUS, ids=IDS)
def test_gpusub_matches_sbatch(results, script, policy_plugin, request):
    _expect_known(request, script, "plugin" if policy_plugin else "plain")
    case = results[script.name]
    sb, gs = case.sides["sbatch"], case.sides["gpusub"]
    report = _report(case)
    if script.mode == "never" and sb.rc == 0 and gs.rc != 0:
        print(f"gpusub refused a job that could never start under sbatch (agreement)\n{report}")
        return
    if script.mode == "hold" and script.expect.get("exists") == "no" and sb.rc == 0 and gs.rc != 0:
        # more than the cluster has: sbatch refuses it unheld and takes it only held (22.05 skips the
        # node check for a held job); the policy's refusal, with its reason, is the same verdict
        assert "rejected by policy" in gs.err, report
        print(f"gpusub refused a held job the cluster can never run (agreement)\n{report}")
        return
    if sb.rc != 0 or gs.rc != 0:
        print(report)
        assert (sb.rc != 0) == (gs.rc != 0), f"only one of them refused the script\n{report}"
        return
    assert gs.job, f"gpusub exited 0 but printed no job id\n{report}"
    problems = []
    sb_tasks, gs_tasks = sb.by_task(), gs.by_task()
    if sorted(sb_tasks) != sorted(gs_tasks):
        problems.append(f"array task ids: sbatch {sorted(sb_tasks)}, gpusub {sorted(gs_tasks)}")
    for task, want in sb_tasks.items():
        got = gs_tasks.get(task)
        if got is None:
            continue
        for key in harness.SUMMARY_KEYS:
            if key == "time" and want["partition"] != got["partition"]:
                continue  # the partitions' default times differ; the policy chose the partition
            if key == "gpu_request_type" and want[key] is None:
                continue  # an untyped request: the policy may resolve the type
            if key in ("state", "exit") and script.mode != "run":
                continue
            if want[key] != got[key]:
                problems.append(f"task {task}: {key}: sbatch {want[key]!r}, gpusub {got[key]!r}")
        if script.mode == "never" and want["reason"] != got["reason"]:
            problems.append(f"task {task}: pends for {got['reason']!r}, sbatch's job for {want['reason']!r}")
        if want["gpu_request_type"] is not None and want["gpu_types"] != got["gpu_types"]:
            problems.append(f"task {task}: GPU TRES: sbatch {want['gpu_types']}, gpusub {got['gpu_types']}")
        elif len(got["gpu_types"]) > 1:
            problems.append(f"task {task}: GPU TRES of several types for an untyped request: {got['gpu_types']}")
    if script.mode == "run":
        for task, want_env in sorted(sb.env.items()):  # the batch step's full environment
            got_env = gs.env.get(task)
            if got_env is None:
                problems.append(f"task {task}: gpusub's batch step recorded no environment (sbatch's did)")
                continue
            key = task if task != "-" else "None"  # by_task's key of a job that is no array
            want, got = sb_tasks.get(key) or {}, gs_tasks.get(key) or {}
            routed = frozenset(k for k in ("partition", "qos") if want.get(k) != got.get(k))
            problems += [f"task {task}: env {d}" for d in harness.env_differences(want_env, got_env, routed)]
        if gs.unfinished:
            problems.append("gpusub's job did not finish in time")
        if gs.counts != sb.counts:
            problems.append(f"runs and workers: sbatch {dict(sorted(sb.counts.items()))}, "
                            f"gpusub {dict(sorted(gs.counts.items()))}")
    if problems:
        tail = harness.output_tail(gs)
        pytest.fail("\n".join(problems) + "\n" + report + (f"\n  gpusub job output:\n{tail}" if tail else ""))


def test_gpusub_prints_what_sbatch_prints(results):
    """Scripts and pipelines parse sbatch's answer (``jobid=$(sbatch job.sh | awk '{print $4}')``): for every
    accepted script, gpusub's standard output must be sbatch's with the other job id."""
    differ, compared = {}, 0
    for name, case in sorted(results.items()):
        sb, gs = case.sides["sbatch"], case.sides["gpusub"]
        if sb.job and gs.job:
            compared += 1
            said = sb.out.replace(sb.job, "<ID>"), gs.out.replace(gs.job, "<ID>")
            if said[0] != said[1]:
                differ[name] = said
    if not compared:
        pytest.skip("no script was accepted by both")
    assert not differ, f"{len(differ)} of {compared} scripts: (sbatch, gpusub) printed " + "; ".join(
        f"{n}: {a!r} vs {b!r}" for n, (a, b) in list(differ.items())[:5])
