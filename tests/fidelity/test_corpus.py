# SPDX-License-Identifier: Apache-2.0
"""The fidelity harness's own parts, without Slurm: the corpus manifest and the stand-ins' counting."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections import Counter

import fidelity_harness as harness  # loaded by conftest.py
import pytest

CORPUS = harness.load_corpus()


def test_corpus_is_large_and_well_formed():
    assert len(CORPUS) >= 60
    assert {s.mode for s in CORPUS} == set(harness.MODES)
    for s in CORPUS:
        with open(s.path) as fh:
            text = fh.read()
        assert text.startswith(("#!/bin/bash\n", "#!/usr/bin/env bash\n")), s.name  # BASH_ENV needs bash
        assert "# SPDX-License-Identifier: Apache-2.0" in text, s.name
        keys = set(s.expect) - {"mode"}
        assert keys <= {"batch", "python", "gpus", "nodes", "tasks", "cpus", "mem", "array", "pends", "exists",
                        "policy"} | {
            k for k in keys if k.startswith(("launch.", "worker."))}, s.name
        if s.mode == "run":
            assert int(s.expect["batch"]) >= 1, s.name


@pytest.mark.parametrize("spec, ids", [("0-3", (0, 1, 2, 3)), ("1-5:2", (1, 3, 5)), ("1,4,7%2", (1, 4, 7)),
                                       ("0-99%10", tuple(range(100))), ("3", (3,))])
def test_task_ids(spec, ids):
    assert harness.task_ids(spec) == ids


def _run(tmp_path, argv: list[str], **env_extra: str) -> Counter:
    log = tmp_path / "records.log"
    log.write_text("")
    (tmp_path / "train.py").write_text("# fidelity: corpus program\nraise SystemExit(3)\n")
    env = {"PATH": f"{harness.BIN}:{os.environ['PATH']}", "FIDELITY_LOG": str(log), "SLURM_JOB_ID": "7",
           "SLURM_NTASKS": "3"} | env_extra
    r = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    counts: Counter = Counter()
    for line in log.read_text().splitlines():
        t = line.split()
        counts[f"{t[0]}.{t[1]}" if t[0] in ("launch", "worker") else t[0]] += 1
        assert t[-6] == "7" or t[0] == "other-script"  # the job id column
    return counts


@pytest.mark.parametrize("argv, env, want", [
    (["torchrun", "--standalone", "--nproc_per_node=4", "train.py", "--lr", "1"], {},
     {"launch.torchrun": 1, "worker.torchrun": 4, "python": 4}),
    (["torchrun", "--nnodes", "2", "--nproc-per-node", "gpu", "train.py"], {"CUDA_VISIBLE_DEVICES": "0,1"},
     {"launch.torchrun": 1, "worker.torchrun": 2, "python": 2}),
    (["python", "-m", "torch.distributed.run", "--nproc_per_node", "3", "train.py"], {},
     {"launch.torchrun": 1, "worker.torchrun": 3, "python": 3}),
    (["accelerate", "launch", "--num_processes", "4", "--num_machines", "2", "--multi_gpu", "train.py"], {},
     {"launch.accelerate": 1, "worker.accelerate": 2, "python": 2}),
    (["deepspeed", "--num_gpus=2", "train.py", "--deepspeed", "ds.json"], {},
     {"launch.deepspeed": 1, "worker.deepspeed": 2, "python": 2}),
    (["deepspeed", "train.py"], {"CUDA_VISIBLE_DEVICES": "0,1,2"},
     {"launch.deepspeed": 1, "worker.deepspeed": 3, "python": 3}),
    (["mpirun", "-np", "2", "--mca", "btl", "self", "-x", "A", "python3", "train.py"], {},
     {"launch.mpirun": 1, "worker.mpirun": 2, "python": 2}),
    (["mpirun", "true"], {}, {"launch.mpirun": 1, "worker.mpirun": 3}),  # slots from SLURM_NTASKS
    (["python", "-u", "train.py"], {}, {"python": 1}),
    (["python3", "-c", "pass"], {}, {}),  # not a corpus program: the real interpreter, no record
])
def test_stand_ins_start_the_workers_the_real_launchers_start(tmp_path, argv, env, want):
    assert _run(tmp_path, argv, **env) == Counter(want)


def test_batch_recorder_counts_only_the_corpus_script(tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\nbash ./other.sh\nbash -c true\n")
    (tmp_path / "other.sh").write_text("true\n")
    sha = hashlib.sha256(script.read_bytes()).hexdigest()
    got = _run(tmp_path, ["bash", str(script)], BASH_ENV=os.path.join(harness.BIN, "record-batch.sh"),
               FIDELITY_SCRIPT_SHA=sha)
    assert got == Counter({"batch": 1, "other-script": 1})


def test_env_differences_allow_only_the_documented_list():
    want = {"SLURM_JOB_ID": "1", "SLURM_GPUS_PER_NODE": "4", "CUDA_VISIBLE_DEVICES": "0,1",
            "SLURM_JOB_CPUS_PER_NODE": "3,1", "SLURM_CPUS_ON_NODE": "3", "SLURM_JOB_PARTITION": "batch"}
    got = dict(want, SLURM_JOB_ID="2", CUDA_VISIBLE_DEVICES="4,5", SLURM_JOB_CPUS_PER_NODE="1,3",
               SLURM_CPUS_ON_NODE="1", SLURM_CPU_BIND="cores")
    assert harness.env_differences(want, got) == []
    assert harness.env_differences(want, dict(got, SLURM_GPUS_PER_NODE="h100:4")) == [
        "SLURM_GPUS_PER_NODE: sbatch '4', gpusub 'h100:4'"]
    assert harness.env_differences(want, dict(got, CUDA_VISIBLE_DEVICES="4")) != []
    assert harness.env_differences(want, dict(got, SLURM_JOB_CPUS_PER_NODE="2(x2)")) != []
    # routed to another partition: the spread over the same 2 nodes is Slurm's, by the CPUs free there
    spread = dict(got, SLURM_JOB_PARTITION="interactive", SLURM_JOB_CPUS_PER_NODE="2(x2)", SLURM_CPUS_ON_NODE="2")
    assert harness.env_differences(want, spread, frozenset({"partition"})) == []
    assert harness.env_differences(want, dict(spread, SLURM_JOB_CPUS_PER_NODE="2(x3)"), frozenset({"partition"})) != []
    assert harness.env_differences(dict(want, SLURM_NTASKS_PER_NODE="2"), dict(spread, SLURM_NTASKS_PER_NODE="2"),
                                   frozenset({"partition"})) != []  # a per-node count asked: no spread of Slurm's
    assert harness.env_differences(want, dict(got, SLURM_JOB_PARTITION="interactive")) != []
    assert harness.env_differences(want, dict(got, SLURM_JOB_PARTITION="interactive"), frozenset({"partition"})) == []
    assert harness.env_differences(want, dict(got, SHLVL="2")) == ["SHLVL: sbatch None, gpusub '2'"]


def test_a_requeued_side_marks_the_case_for_a_rerun():
    """run_all runs a case again, alone, when Slurm started one of its jobs twice (a neighbour preempted it);
    the restart count comes from Slurm's record (scontrol's Restarts=, squeue's restart_cnt)."""
    base = {"Restarts": "0", "JobState": "COMPLETED", "NumNodes": "1"}
    case = harness.Case(CORPUS[0], "/nonexistent")
    for tool, restarts in (("sbatch", "0"), ("gpusub", "1")):
        case.sides[tool] = harness.Side(tool, [tool], job=tool)
        case.sides[tool].records = [harness.summarize(base | {"Restarts": restarts})]
    assert case.restarted() == ["gpusub job gpusub (restarts 1)"]
    case.sides["gpusub"].records = [harness.summarize(base)]
    assert case.restarted() == []


def test_a_spread_job_marks_the_case_for_a_rerun():
    """A job Slurm placed on more nodes than the manifest says (no node has the GPUs free while the other
    cases run) is no disagreement yet: run_all runs the case again alone."""
    script = next(s for s in CORPUS if s.mode == "run" and s.expect.get("nodes") == "1")
    base = {"Restarts": "0", "JobState": "COMPLETED", "NumNodes": "1"}
    case = harness.Case(script, "/nonexistent")
    for tool in ("sbatch", "gpusub"):
        case.sides[tool] = harness.Side(tool, [tool], job=tool)
        case.sides[tool].records = [harness.summarize(base)]
    assert case.disturbed() == []
    case.sides["sbatch"].records = [harness.summarize(base | {"NumNodes": "2"})]
    assert case.disturbed() == ["sbatch job sbatch on 2 node(s) (the manifest: 1)",
                                "gpusub job gpusub on 1 node(s) (the manifest: 1)"]
