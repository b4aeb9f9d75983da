# SPDX-License-Identifier: Apache-2.0
"""The default placement plan keeps the job's shape: only placement options, only where they cannot
make the job unschedulable. Expected options are written by hand from the lab measurements in
docs/gpusub.md ("Placement"): h100x8 GPUs 0-3 on socket 0 (cores 0-15), 4-7 on socket 1 (16-31);
a100x4 GPUs 0-1 on socket 1, 2-3 on socket 0."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from slurm_gpu.placement.plan import node_layout, plan_binding, plan_placement
from slurm_gpu.request import Decision, JobRequest
from slurm_gpu.slurm.release import spelling_for
from slurm_gpu.topology import load_topology_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
H100 = node_layout(load_topology_file(os.path.join(ROOT, "examples/topology/h100x8.yaml")), "h100x8", "h100n[1-2]")
A100 = node_layout(load_topology_file(os.path.join(ROOT, "examples/topology/a100x4.yaml")), "a100x4", "a100n1")
S2205 = spelling_for((22, 5, 8))
SHAPE = ("--ntasks=", "--nodes=", "--cpus-per-task=", "--cpus-per-gpu=", "--mem", "--gpus", "--gres=",
         "--sockets-per-node", "--ntasks-per-node=", "--gpus-per-socket")


S2411 = spelling_for((24, 11, 5))


def plan(layout=H100, defaults=None, given=(), spelling=S2205, **req):
    gtype = "h100" if layout is H100 else "a100"
    request = JobRequest(gpu_type=gtype, **req)
    decision = Decision(accepted=True, gpus=request.total_gpus, gpu_type=gtype)
    return plan_placement(request, decision, spelling, [layout], defaults=defaults, given=given)


CASES = [
    # (id, layout, request, expected sbatch options)
    ("1task-c16-4gpu", H100, dict(gpus_per_node=4, cpus_per_task=16), ["--gres-flags=enforce-binding"]),
    ("1task-c24-4gpu-too-many-cores", H100, dict(gpus_per_node=4, cpus_per_task=24), []),
    ("8tasks-per-node-c2-8gpu", H100, dict(gpus_per_node=8, ntasks_per_node=8, cpus_per_task=2),
     ["--ntasks-per-socket=4", "--gres-flags=enforce-binding"]),
    ("ntasks8-c2-8gpu-one-node", H100, dict(gpus_per_node=8, ntasks=8, cpus_per_task=2),
     ["--ntasks-per-socket=4", "--gres-flags=enforce-binding"]),
    ("ntasks8-c2-8gpu-2-nodes", H100, dict(gpus_per_node=8, ntasks=16, nodes=2, cpus_per_task=2),
     ["--ntasks-per-socket=4", "--gres-flags=enforce-binding"]),
    ("ntasks-too-many-for-one-node", H100, dict(gpus_per_node=8, ntasks=24, cpus_per_task=2), []),
    ("2tasks-2gpu-one-socket", H100, dict(gpus_per_node=2, ntasks_per_node=2, cpus_per_task=4),
     ["--gres-flags=enforce-binding"]),
    ("gpus-per-job-2-c12", H100, dict(gpus=2, cpus_per_task=12), ["--gres-flags=enforce-binding"]),
    ("a100-2gpu-c8", A100, dict(gpus_per_node=2, cpus_per_task=8), ["--gres-flags=enforce-binding"]),
    ("a100-4gpu-4tasks", A100, dict(gpus_per_node=4, ntasks_per_node=4, cpus_per_task=4),
     ["--ntasks-per-socket=2", "--gres-flags=enforce-binding"]),
    ("odd-tasks-no-socket-cap", H100, dict(gpus_per_node=8, ntasks_per_node=3, cpus_per_task=2),
     ["--gres-flags=enforce-binding"]),
    ("cpus-per-gpu-no-socket-cap", H100, dict(gpus_per_node=8, ntasks_per_node=8, cpus_per_gpu=2),
     ["--gres-flags=enforce-binding"]),
    ("gpus-over-nodes-unknown-layout", H100, dict(gpus=12), []),
]


@pytest.mark.parametrize("layout,req,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_placement_options(layout, req, expected):
    p = plan(layout, **req)
    assert list(p.sbatch_options) == expected
    assert not any(o.startswith(SHAPE) for o in p.sbatch_options)
    assert p.launch == "batch" and p.env == ()


def test_user_settings_are_never_overridden():
    p = plan(gpus_per_node=8, ntasks_per_node=8, cpus_per_task=2, given=("gres-flags", "ntasks-per-socket"))
    assert p.sbatch_options == ()


@pytest.mark.parametrize("given", [("extra-node-info",), ("sockets-per-node",), ("cores-per-socket",),
                                   ("threads-per-core",)])
def test_no_enforce_binding_where_the_user_chose_sockets_and_cores(given):
    """-B 2:16 with one a100: 32 cores on two sockets, the GPU's socket has 16; enforce-binding made
    sbatch --test-only refuse gpusub's job (Requested node configuration is not available) where plain
    sbatch's starts (measured in the lab, 22.05.8)."""
    assert plan(A100, gpus_per_node=2, cpus_per_task=8).sbatch_options == ("--gres-flags=enforce-binding",)
    p = plan(A100, gpus_per_node=2, cpus_per_task=8, given=given)
    assert p.sbatch_options == () and any("the job's sockets and cores are the user's" in w for w in p.explanation)


def test_policy_cpus_per_gpu_is_assumed_not_added():
    p = plan(defaults=SimpleNamespace(cpus_per_gpu="topology"), gpus_per_node=8, ntasks_per_node=8)
    # DefCpuPerGPU=4 on the partition gives 32 CPUs: they fit both sockets; no --ntasks-per-socket next to it
    assert list(p.sbatch_options) == ["--gres-flags=enforce-binding"]
    assert p.cpus_per_gpu == 4


def test_one_task_over_two_sockets_is_explained_not_changed():
    p = plan(gpus_per_node=8, cpus_per_task=8)
    assert list(p.sbatch_options) == ["--gres-flags=enforce-binding"]
    assert any("its cores come from one socket" in w for w in p.warnings)


def test_more_cpus_than_local_cores_warns():
    p = plan(gpus_per_node=2, cpus_per_gpu=12)
    assert any("more than the 4 cores local" in w for w in p.warnings)


def test_inner_srun_binding_through_input_variables():
    p = plan(gpus_per_node=4, cpus_per_task=16)
    assert "--cpu-bind=cores" in p.srun_options


def test_per_gpu_launch_is_opt_in():
    request = JobRequest(gpu_type="h100", gpus_per_node=8)
    decision = Decision(accepted=True, gpus=8, gpu_type="h100")
    default = plan_binding(request, decision, S2205, [H100])
    opted = plan_binding(request, decision, S2205, [H100], launch="per-gpu")
    assert default.launch == "batch" and "--ntasks=8" not in default.sbatch_options
    assert opted.launch == "per-gpu" and "--ntasks=8" in opted.sbatch_options


def test_uneven_tasks_over_sockets_warns():
    p = plan(gpus_per_node=8, ntasks_per_node=3, cpus_per_task=2)
    assert any("do not split evenly over the 2 sockets" in w for w in p.warnings)


def test_gpus_not_filling_nodes_warns():
    p = plan(gpus=12)
    assert any("do not fill whole nodes of 8" in w for w in p.warnings)


@pytest.mark.parametrize("constraint,warned", [
    ("a100", True), ("h100", False), ("h100&mig", False), ("h100&ib", True), ("[rack1*2|rack2*2]", False),
    ("[rackX*2|rackY*2]", True), ("mig|ib", False),
])
def test_constraint_no_node_has(constraint, warned):
    from slurm_gpu.placement.plan import constraint_warnings

    got = constraint_warnings(constraint, [("h100x8", ("h100", "mig", "rack1"))], "h100")
    assert bool(got) == warned, got


# Slurm 24.11.5 (measured in the 24.11 lab, docs/gpusub.md "Placement"): --gres-flags=enforce-binding gives a
# job every core of its GPUs' sockets (-c 8 with 2 h100: NumCPUs 16 instead of 8; -c 8 with 4 a100: 32 instead
# of 8), so gpusub never adds it there; --ntasks-per-socket keeps the shape there (8 tasks x 2 CPUs: 16 CPUs on
# cores 0-7,16-23) and is still added.
CASES_2411 = [
    ("1task-c16-4gpu", H100, dict(gpus_per_node=4, cpus_per_task=16), []),
    ("8tasks-per-node-c2-8gpu", H100, dict(gpus_per_node=8, ntasks_per_node=8, cpus_per_task=2),
     ["--ntasks-per-socket=4"]),
    ("ntasks8-c2-8gpu-2-nodes", H100, dict(gpus_per_node=8, ntasks=16, nodes=2, cpus_per_task=2),
     ["--ntasks-per-socket=4"]),
    ("gpus-per-job-2-c8", H100, dict(gpus=2, cpus_per_task=8), []),
    ("a100-4gpu-c8-one-node", A100, dict(gpus_per_node=4, cpus_per_task=8, nodes=1), []),
    ("a100-1gpu-c4", A100, dict(gpus=1, cpus_per_task=4), []),
    ("a100-4gpu-4tasks", A100, dict(gpus_per_node=4, ntasks_per_node=4, cpus_per_task=4), ["--ntasks-per-socket=2"]),
]


@pytest.mark.parametrize("layout,req,expected", [c[1:] for c in CASES_2411], ids=[c[0] for c in CASES_2411])
def test_placement_options_on_24_11(layout, req, expected):
    p = plan(layout, spelling=S2411, **req)
    assert list(p.sbatch_options) == expected
    assert any(w.startswith("no --gres-flags=enforce-binding: on Slurm 24.11.5 it changes the job's CPUs")
               for w in p.explanation), p.explanation


@pytest.mark.parametrize("version,added", [((22, 5, 8), True), ((23, 2, 7), False), ((23, 11, 10), False),
                                           ((24, 11, 5), False), ((25, 11, 0), False)])
def test_enforce_binding_only_where_it_keeps_the_shape(version, added):
    p = plan(spelling=spelling_for(version), gpus=2, cpus_per_task=8)
    assert ("--gres-flags=enforce-binding" in p.sbatch_options) is added


def test_user_gres_flags_kept_on_24_11():
    p = plan(spelling=S2411, gpus_per_node=8, ntasks_per_node=8, cpus_per_task=2, given=("gres-flags",))
    assert list(p.sbatch_options) == ["--ntasks-per-socket=4"]
    assert any(w == "kept --gres-flags as set by you or the policy" for w in p.explanation)
    assert not any("changes the job's CPUs" in w for w in p.explanation)


def test_partition_def_cpu_per_gpu_is_the_least_over_its_node_types():
    # batch holds h100x8 (4 local cores per GPU) and a100x4 (8): the emitter writes DefCpuPerGPU=4, and an
    # a100 job there gets 4 per GPU, spread per GPU by Slurm (no one-socket warning)
    request = JobRequest(gpu_type="a100", gpus_per_node=4)
    decision = Decision(accepted=True, gpus=4, gpu_type="a100")
    p = plan_placement(request, decision, S2205, [A100], defaults=SimpleNamespace(cpus_per_gpu="topology"),
                       partition_layouts=[H100, A100])
    assert p.cpus_per_gpu == 4 and not p.warnings
    alone = plan_placement(request, decision, S2205, [A100], defaults=SimpleNamespace(cpus_per_gpu="topology"))
    assert alone.cpus_per_gpu == 8
