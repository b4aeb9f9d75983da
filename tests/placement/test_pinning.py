# SPDX-License-Identifier: Apache-2.0
"""The per-worker split, table-driven, with masks written out by hand from the topologies:

- h100x8 (lab): GPUs 0-3 local to cpus 0-15 (NUMA 0), GPUs 4-7 to 16-31 (NUMA 1);
- a100x4 (lab): GPUs 0-1 local to 16-31 (socket 1), GPUs 2-3 to 0-15 (socket 0);
- DGX A100 (2x EPYC 7742, NPS4, SMT: siblings i and i+128): GPUs 0,1 -> NUMA 3 (48-63,176-191),
  2,3 -> NUMA 1 (16-31,144-159), 4,5 -> NUMA 7 (112-127,240-255), 6,7 -> NUMA 5 (80-95,208-223).
"""

from __future__ import annotations

import pytest

from slurm_gpu.cpulist import parse_cpulist
from slurm_gpu.placement.pinning import (
    PinError,
    gpus_from_env,
    plan_node_pins,
    plan_worker_pins,
    rank_from_env,
)

C = parse_cpulist
FIXTURE = {"h100x8": "h100", "a100x4": "a100", "dgx": "dgx"}

# (name, topology, allocation, visible GPU ids, workers, order, expected masks, workers warned)
CASES = [
    ("h100 8 GPUs, whole node", "h100x8", "0-31", [0, 1, 2, 3, 4, 5, 6, 7], 8, "keep",
     ["0-3", "4-7", "8-11", "12-15", "16-19", "20-23", "24-27", "28-31"], []),
    ("h100 8 GPUs, partial 0-3,16-19", "h100x8", "0-3,16-19", [0, 1, 2, 3, 4, 5, 6, 7], 8, "keep",
     ["0", "1", "2", "3", "16", "17", "18", "19"], []),
    ("h100 8 GPUs, plain sbatch -c16 (all on socket 0)", "h100x8", "0-15", [0, 1, 2, 3, 4, 5, 6, 7], 8, "keep",
     ["0-1", "2-3", "4-5", "6-7", "8-9", "10-11", "12-13", "14-15"], [4, 5, 6, 7]),
    ("h100 gpusub 8 GPUs x 2 cores (8 + 8)", "h100x8", "0-7,16-23", [0, 1, 2, 3, 4, 5, 6, 7], 8, "keep",
     ["0-1", "2-3", "4-5", "6-7", "16-17", "18-19", "20-21", "22-23"], []),
    ("h100 4 GPUs -c 8", "h100x8", "0-7", [0, 1, 2, 3], 4, "keep", ["0-1", "2-3", "4-5", "6-7"], []),
    ("h100 3 GPUs, 10 cpus: uneven 4+3+3", "h100x8", "0-9", [0, 1, 2], 3, "keep", ["0-3", "4-6", "7-9"], []),
    ("h100 GPUs 0 and 4, locality before evenness", "h100x8", "0-9,16-21", [0, 4], 2, "keep", ["0-9", "16-21"], []),
    ("h100 GPUs 0,4, two workers per GPU", "h100x8", "0-3,16-19", [0, 4], 4, "keep",
     ["0-1", "16-17", "2-3", "18-19"], []),
    ("h100 GPUs 4,5 with only remote cpus", "h100x8", "0-3", [4, 5], 2, "keep", ["0-1", "2-3"], [0, 1]),
    ("h100 one GPU keeps the remote rest", "h100x8", "0-3,16-19", [0], 1, "keep", ["0-3,16-19"], []),
    ("h100 GPUs 1,5, remote spare cpus to the emptier pool", "h100x8", "0-5,16-17,20", [1, 5], 2, "keep",
     ["0-5", "16-17,20"], []),
    ("h100 fewer cpus than workers: round robin", "h100x8", "0-2", [0, 1, 2, 3], 4, "keep",
     ["0", "1", "2", "0"], []),
    ("h100 pool overflow takes the other socket's spare cpus", "h100x8", "0,16-18", [0, 1, 2, 3], 4, "keep",
     ["0", "16", "17", "18"], [1, 2, 3]),
    ("a100 4 GPUs keep order", "a100x4", "0-31", [0, 1, 2, 3], 4, "keep", ["16-23", "24-31", "0-7", "8-15"], []),
    ("a100 4 GPUs socket order", "a100x4", "0-31", [0, 1, 2, 3], 4, "socket", ["0-7", "8-15", "16-23", "24-31"], []),
    ("a100 3 GPUs 0,2,3 on 16 + 8 cores", "a100x4", "0-23", [0, 2, 3], 3, "keep", ["16-23", "0-7", "8-15"], []),
    ("dgx 2 GPUs on NUMA 3, 8 whole cores", "dgx", "48-55,176-183", [0, 1], 2, "keep",
     ["48-51,176-179", "52-55,180-183"], []),
    ("dgx whole cores kept together, 5 cores", "dgx", "48-52,176-180", [0, 1], 2, "keep",
     ["48-50,176-178", "51-52,179-180"], []),
    ("dgx one core, two workers: threads split", "dgx", "48,176", [0, 1], 2, "keep", ["48", "176"], []),
    ("dgx 8 GPUs, one core each on their NUMA nodes", "dgx",
     "16-17,48-49,80-81,112-113,144-145,176-177,208-209,240-241",
     [0, 1, 2, 3, 4, 5, 6, 7], 8, "keep",
     ["48,176", "49,177", "16,144", "17,145", "112,240", "113,241", "80,208", "81,209"], []),
    ("dgx 2 GPUs, allocation on NUMA 0 only (no GPU there)", "dgx", "0-15", [0, 1], 2, "keep", ["0-7", "8-15"], [0, 1]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_masks(request, case):
    _, topo, alloc, gpus, workers, order, expected, warned = case
    loc = request.getfixturevalue(FIXTURE[topo])
    node = plan_node_pins(C(alloc), loc.gpu_cpus, gpus, workers, cpu_core=loc.cpu_core, cpu_numa=loc.cpu_numa,
                          gpu_socket=loc.gpu_socket, order=order)
    assert [w.cpus for w in node.workers] == [C(e) for e in expected]
    assert [w.local_rank for w in node.workers if w.warnings] == warned
    assert all(w.cuda_visible_devices == node.cuda_visible_devices for w in node.workers)


def test_fewer_cpus_than_workers_warns_once_for_the_node(h100):
    node = plan_node_pins(C("0-2"), h100.gpu_cpus, [0, 1, 2, 3], 4)
    assert len(node.warnings) == 1 and "round robin" in node.warnings[0]
    assert plan_node_pins(C("0-3"), h100.gpu_cpus, [0, 1, 2, 3], 4).warnings == ()


def test_cuda_visible_devices_order(a100):
    keep = plan_node_pins(C("0-31"), a100.gpu_cpus, [0, 1, 2, 3], 4, gpu_socket=a100.gpu_socket)
    sock = plan_node_pins(C("0-31"), a100.gpu_cpus, [0, 1, 2, 3], 4, gpu_socket=a100.gpu_socket, order="socket")
    assert keep.cuda_visible_devices == "0,1,2,3"
    assert sock.cuda_visible_devices == "2,3,0,1"
    assert [w.gpu for w in sock.workers] == ["2", "3", "0", "1"]
    # more workers than GPUs: worker r drives entry r % n
    two = plan_node_pins(C("0-31"), a100.gpu_cpus, [2, 0], 4)
    assert [w.gpu_id for w in two.workers] == [2, 0, 2, 0]


def test_memory_nodes(h100, dgx):
    node = plan_node_pins(C("0-3,16-19"), h100.gpu_cpus, [0, 4], 2, cpu_numa=h100.cpu_numa)
    assert [w.mem_nodes for w in node.workers] == [(0,), (1,)]
    pin = plan_worker_pins(C("48-55,176-183"), dgx.gpu_cpus, [0, 1], 1, 2, cpu_core=dgx.cpu_core,
                           cpu_numa=dgx.cpu_numa)
    assert pin.mem_nodes == (3,) and pin.cpus == C("52-55,180-183")


def test_renumbered_cuda_visible_devices_map_to_global_ids(a100):
    """Device cgroups renumber CUDA_VISIBLE_DEVICES from 0; SLURM_STEP_GPUS keeps the global ids."""
    env = {"CUDA_VISIBLE_DEVICES": "0,1", "SLURM_STEP_GPUS": "2,0", "SLURM_JOB_GPUS": "0,2"}
    gpus = gpus_from_env(env, a100)
    assert gpus == [("0", 2), ("1", 0)]
    node = plan_node_pins(C("0-7,16-23"), a100.gpu_cpus, gpus, 2, gpu_socket=a100.gpu_socket, order="socket")
    assert node.cuda_visible_devices == "0,1"
    assert [w.cpus for w in node.workers] == [C("0-7"), C("16-23")]
    node = plan_node_pins(C("0-7,16-23"), a100.gpu_cpus, gpus_from_env({"CUDA_VISIBLE_DEVICES": "0,1",
                          "SLURM_JOB_GPUS": "1,3"}, a100), 2, gpu_socket=a100.gpu_socket, order="socket")
    assert node.cuda_visible_devices == "1,0" and [w.gpu_id for w in node.workers] == [3, 1]


@pytest.mark.parametrize("env, expected", [
    ({"CUDA_VISIBLE_DEVICES": "3,1"}, [("3", 3), ("1", 1)]),
    ({"SLURM_JOB_GPUS": "4-5"}, [("4", 4), ("5", 5)]),
    ({}, [(str(i), i) for i in range(4)]),
    ({"CUDA_VISIBLE_DEVICES": "GPU-aaa,2"}, [("GPU-aaa", None), ("2", 2)]),
    ({"CUDA_VISIBLE_DEVICES": "0,1", "SLURM_STEP_GPUS": "5"}, [("0", 0), ("1", 1)]),  # lengths differ
])
def test_gpus_from_env(a100, env, expected):
    assert gpus_from_env(env, a100) == expected


@pytest.mark.parametrize("env, expected", [
    ({"LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "8"}, (3, 8, "LOCAL_RANK")),
    ({"LOCAL_RANK": "1", "LOCAL_SIZE": "4"}, (1, 4, "LOCAL_RANK")),  # DeepSpeed's launcher
    ({"OMPI_COMM_WORLD_LOCAL_RANK": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}, (2, 4, "OMPI_COMM_WORLD_LOCAL_RANK")),
    ({"MPI_LOCALRANKID": "0", "MPI_LOCALNRANKS": "2"}, (0, 2, "MPI_LOCALRANKID")),
    ({"SLURM_LOCALID": "1", "SLURM_STEP_TASKS_PER_NODE": "4(x2)"}, (1, 4, "SLURM_LOCALID")),
    ({"LOCAL_RANK": "0"}, (0, None, "LOCAL_RANK")),
    ({"RANK": "3"}, None),
])
def test_rank_from_env(env, expected):
    assert rank_from_env(env) == expected


def test_unknown_gpu_locality_is_named(h100):
    node = plan_node_pins(C("0-3"), h100.gpu_cpus, [("GPU-x", None), ("9", 9)], 2)
    assert [w.cpus for w in node.workers] == [C("0-1"), C("2-3")]
    assert "locality of GPU GPU-x is unknown" in node.workers[0].warnings[0]
    assert "locality of GPU 9 is unknown" in node.workers[1].warnings[0]


@pytest.mark.parametrize("call, message", [
    (lambda loc: plan_node_pins([], loc.gpu_cpus, [0], 1), "allocation is empty"),
    (lambda loc: plan_node_pins([0], loc.gpu_cpus, [0], 0), "at least 1 worker"),
    (lambda loc: plan_worker_pins([0], loc.gpu_cpus, [0], 2, 2), "outside 0..1"),
    (lambda loc: plan_node_pins([0], loc.gpu_cpus, [0], 1, order="numa"), "expected one of keep, socket"),
    (lambda loc: rank_from_env({"LOCAL_RANK": "x"}), "LOCAL_RANK='x'"),
    (lambda loc: gpus_from_env({"SLURM_JOB_GPUS": "a-b"}), "not a list of GPU ids"),
])
def test_bad_input_is_one_clear_error(h100, call, message):
    with pytest.raises(PinError, match=message):
        call(h100)
