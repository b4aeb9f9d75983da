# SPDX-License-Identifier: Apache-2.0
"""The binding planner on the lab's node types (examples/topology), and the per-task prelude run in bash."""

from __future__ import annotations

import os
import subprocess

import pytest

from slurm_gpu.placement.per_gpu import plan_per_gpu, task_prelude
from slurm_gpu.placement.plan import node_layout
from slurm_gpu.request import Decision, JobRequest
from slurm_gpu.slurm.release import spelling_for
from slurm_gpu.topology import load_topology_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
H100 = node_layout(load_topology_file(os.path.join(ROOT, "examples/topology/h100x8.yaml")), "h100x8", "h100n[1-2]")
A100 = node_layout(load_topology_file(os.path.join(ROOT, "examples/topology/a100x4.yaml")), "a100x4", "a100n1")
S2205, S2411 = spelling_for((22, 5, 8)), spelling_for((24, 11, 5))


def plan(gpus, layout=H100, spelling=S2205, isolation="shared", given=(), defaults=None, **req):
    gtype = "h100" if layout is H100 else "a100"
    request = JobRequest(gpus_per_node=req.pop("gpus_per_node", gpus), gpu_type=gtype, **req)
    decision = Decision(accepted=True, gpus=gpus, gpu_type=gtype, gres=f"gpu:{gtype}:{gpus}")
    return plan_per_gpu(request, decision, None, spelling, isolation, layouts=[layout], given=given,
                        defaults=defaults)


def test_layouts_from_topology_files():
    # TOPO contract: h100x8 GPUs 0-3 on socket 0, 4-7 on socket 1; a100x4 GPUs 0-1 on socket 1, 2-3 on socket 0
    assert H100.socket_gpus == ((0, (0, 1, 2, 3)), (1, (4, 5, 6, 7)))
    assert A100.socket_gpus == ((0, (2, 3)), (1, (0, 1)))
    assert H100.local_cores_per_gpu == 4 and A100.local_cores_per_gpu == 8  # 16 cores / GPUs per socket
    assert A100.socket_major_order() == (2, 3, 0, 1)


def test_eight_h100_one_task_per_gpu_spread_over_both_sockets():
    p = plan(8)
    assert (p.tasks, p.cpus_per_task, p.gpus_per_task, p.sockets_per_node) == (8, 4, 1, 2)
    assert "--ntasks=8" in p.sbatch_options and "--cpus-per-task=4" in p.sbatch_options
    assert "--ntasks-per-socket=4" in p.sbatch_options
    assert "--gres-flags=enforce-binding" in p.sbatch_options
    assert "--distribution=block:block" in p.sbatch_options
    assert "--gpus-per-socket=h100:4" in p.sbatch_options and "--sockets-per-node=2" in p.sbatch_options
    assert ("OMP_NUM_THREADS", "4") in p.env


def test_two_h100_fit_one_socket():
    p = plan(2)
    assert p.sockets_per_node == 1 and p.tasks == 2
    assert "--ntasks-per-socket=2" in p.sbatch_options  # both tasks (and their cores) on the GPUs' socket
    assert "--gpus-per-socket=h100:2" in p.sbatch_options and "--sockets-per-node=1" in p.sbatch_options


def test_one_gpu_one_task_with_its_local_cores():
    p = plan(1, A100)
    assert (p.tasks, p.cpus_per_task, p.launch) == (1, 8, "per-gpu")
    assert not any(o.startswith("--ntasks-per-socket") for o in p.sbatch_options)


def test_three_a100_split_two_plus_one():
    p = plan(3, A100)
    assert p.sockets_per_node == 2 and "--ntasks-per-socket=2" in p.sbatch_options
    assert not any(o.startswith("--gpus-per-socket") for o in p.sbatch_options)  # 2 + 1 is not expressible
    assert p.cpus_per_task == 8


def test_user_shape_is_kept():
    p = plan(4, ntasks=2, cpus_per_task=6)
    assert p.tasks == 2 and p.cpus_per_task == 6 and p.gpus_per_task == 2
    assert not any(o.startswith(("--ntasks=", "--cpus-per-task=")) for o in p.sbatch_options)
    p = plan(8, given=("distribution", "ntasks-per-socket"))
    assert not any(o.startswith(("--distribution", "--ntasks-per-socket")) for o in p.sbatch_options)
    assert not any(o.startswith("--distribution") for o in p.srun_options)


def test_policy_number_is_capped_by_local_cores():
    class Defaults:
        cpus_per_gpu = 12

    assert plan(2, defaults=Defaults()).cpus_per_gpu == 4  # only 4 cores per h100 are local
    Defaults.cpus_per_gpu = 2
    assert plan(2, defaults=Defaults()).cpus_per_task == 2


def test_user_cpus_per_gpu_beyond_local_warns():
    p = plan(8, cpus_per_gpu=6)
    assert p.cpus_per_gpu == 6 and any("more than the 4 cores local" in w for w in p.warnings)


def test_shared_isolation_per_version():
    old = plan(4, spelling=S2205)
    assert not any("gpu-bind" in o or "allow-task-sharing" in o for o in old.srun_options)
    new = plan(4, spelling=S2411)
    assert "--gres-flags=allow-task-sharing" in new.srun_options
    assert not any("allow-task-sharing" in o for o in new.sbatch_options)  # sbatch refuses it


def test_strict_isolation_binds_one_gpu_per_task():
    p = plan(4, isolation="strict")
    assert "--gpu-bind=closest" in p.srun_options


def test_no_gpus_no_plan():
    request = JobRequest(ntasks=4)
    assert plan_per_gpu(request, Decision(accepted=True), None, S2205, layouts=[H100]) is None


def test_bad_isolation_names_the_accepted_values():
    with pytest.raises(Exception, match="shared, strict"):
        plan(2, isolation="loose")


def run_prelude(prelude: str, env: dict[str, str]) -> dict[str, str]:
    script = prelude + '\necho "CVD=$CUDA_VISIBLE_DEVICES LOCAL_RANK=$LOCAL_RANK"'
    out = subprocess.run(["bash", "-c", script], env={"PATH": os.environ["PATH"], **env},
                         capture_output=True, text=True, check=True).stdout.split()
    return dict(w.split("=", 1) for w in out)


def test_prelude_orders_a100_gpus_socket_major():
    # tasks are laid out block over sockets: task 0 sits on socket 0, whose GPUs are 2 and 3
    prelude = task_prelude([H100, A100], "shared", 1)
    got = run_prelude(prelude, {"SLURMD_NODENAME": "a100n1", "SLURM_JOB_GPUS": "0,1,2,3",
                                "CUDA_VISIBLE_DEVICES": "0,1,2,3", "SLURM_LOCALID": "0"})
    assert got == {"CVD": "2,3,0,1", "LOCAL_RANK": "0"}


def test_prelude_maps_global_ids_onto_renumbered_cvd():
    # cgroup ConstrainDevices renumbers CVD from 0 while SLURM_JOB_GPUS keeps global ids (notes, sec. 4)
    prelude = task_prelude([A100], "shared", 1)
    got = run_prelude(prelude, {"SLURMD_NODENAME": "a100n1", "SLURM_JOB_GPUS": "1,2",
                                "CUDA_VISIBLE_DEVICES": "0,1", "SLURM_LOCALID": "1"})
    assert got["CVD"] == "1,0"  # global 2 (socket 0) first = CVD entry 1


def test_prelude_strict_keeps_only_the_tasks_gpu():
    prelude = task_prelude([A100], "strict", 1)
    got = run_prelude(prelude, {"SLURMD_NODENAME": "a100n1", "SLURM_JOB_GPUS": "0,1,2,3",
                                "CUDA_VISIBLE_DEVICES": "0,1,2,3", "SLURM_LOCALID": "3"})
    assert got == {"CVD": "1", "LOCAL_RANK": "3"}


def test_prelude_h100_order_is_index_order():
    prelude = task_prelude([H100, A100], "shared", 1)
    got = run_prelude(prelude, {"SLURMD_NODENAME": "h100n2", "SLURM_STEP_GPUS": "4,5,6,7",
                                "CUDA_VISIBLE_DEVICES": "4,5,6,7", "SLURM_LOCALID": "2"})
    assert got["CVD"] == "4,5,6,7"


def test_plan_json_is_serialisable():
    import json

    data = json.loads(json.dumps(plan(8).to_json()))
    assert data["tasks"] == 8 and data["gpu_order"] == {"h100n[1-2]": [0, 1, 2, 3, 4, 5, 6, 7]}


def test_prelude_strict_after_slurm_closest_binding():
    # srun --gpu-bind=closest leaves task 2 (socket 1 of a100n1) CUDA_VISIBLE_DEVICES=0,1 of the step's 0-3
    prelude = task_prelude([A100], "strict", 1)
    for rank, want in (("2", "0"), ("3", "1")):
        got = run_prelude(prelude, {"SLURMD_NODENAME": "a100n1", "SLURM_STEP_GPUS": "0,1,2,3",
                                    "CUDA_VISIBLE_DEVICES": "0,1", "SLURM_LOCALID": rank})
        assert got["CVD"] == want


@pytest.mark.parametrize("version, sharing", [((22, 5, 8), False), ((23, 2, 7), False), ((23, 11, 3), False),
                                              ((23, 11, 10), True), ((24, 11, 5), True), ((25, 11, 0), True)])
def test_plan_spellings_per_version(version, sharing):
    p = plan(8, spelling=spelling_for(version))
    assert ("--gres-flags=allow-task-sharing" in p.srun_options) is sharing
    assert not any(o.startswith("--tres-bind") for o in p.srun_options + p.sbatch_options)
    strict = plan(8, spelling=spelling_for(version), isolation="strict")
    assert "--gpu-bind=closest" in strict.srun_options  # the one spelling every version accepts


def test_no_per_socket_gpus_next_to_the_users_gpus_options():
    p = plan(4, given=("gpus",))
    assert not any(o.startswith(("--gpus-per-socket", "--sockets-per-node")) for o in p.sbatch_options)


def test_policy_cpus_per_gpu_option_means_no_cpus_per_task():
    # sbatch refuses --cpus-per-task next to --cpus-per-gpu ("Invalid generic resource (gres) specification")
    p = plan(2, given=("cpus-per-gpu",))
    assert not any(o.startswith("--cpus-per-task") for o in p.sbatch_options)


def test_cpus_per_gpu_with_per_socket_gpus_drops_ntasks_per_socket():
    # measured on 22.05.8: the three together are "Requested node configuration is not available"
    p = plan(8, given=("cpus-per-gpu",))
    assert "--gpus-per-socket=h100:4" in p.sbatch_options
    assert not any(o.startswith("--ntasks-per-socket") for o in p.sbatch_options)
