# SPDX-License-Identifier: Apache-2.0
"""The locality rule on what the scheduler reports (the lab's gres.conf and jobs' per-node allocations,
written here as `scontrol show job -d` prints them: ``Nodes=X CPU_IDs=... GRES=...``)."""

from __future__ import annotations

import re

from slurm_gpu.cpulist import parse_cpulist
from slurm_gpu.hostlist import expand_hostlist
from slurm_gpu.placement.locality import NodeAlloc, parse_gres_conf
from slurm_gpu.placement.locality import check_job as _check
from slurm_gpu.slurm.records import gpu_indices


def parse_job_detail(text: str) -> list[NodeAlloc]:
    """The allocations these tests write in scontrol's notation (a test's own data, no Slurm output)."""
    return [NodeAlloc(node, frozenset(parse_cpulist(cpus)), gpu_indices(gres), gres)
            for nodes, cpus, gres in re.findall(r"Nodes=(\S+) CPU_IDs=(\S+) Mem=\S+ GRES=(\S*)", text)
            for node in expand_hostlist(nodes)]


def check_job(text: str, table, cpus_per_gpu: int | None = None) -> list[str]:
    return _check(parse_job_detail(text), table, cpus_per_gpu)

GRES_CONF = """\
AutoDetect=off
NodeName=h100n[1-2] Name=gpu Type=h100 File=/dev/nvidia[0-3] Cores=0-15
NodeName=h100n[1-2] Name=gpu Type=h100 File=/dev/nvidia[4-7] Cores=16-31
NodeName=a100n1 Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=16-31
NodeName=a100n1 Name=gpu Type=a100 File=/dev/nvidia[2-3] Cores=0-15
"""
TABLE = parse_gres_conf(GRES_CONF)


def test_gres_conf_indices_follow_file_order():
    assert TABLE["h100n2"][5] == frozenset(range(16, 32))
    assert TABLE["a100n1"][0] == frozenset(range(16, 32))  # GPU order != socket order
    assert TABLE["a100n1"][3] == frozenset(range(16))


def test_plain_sbatch_8_gpus_fails_the_rule():
    # issue 5: --ntasks=8 --cpus-per-task=2 gets CPU_IDs=0-15, all on socket 0
    detail = "   Nodes=h100n1 CPU_IDs=0-15 Mem=64000 GRES=gpu:h100:8(IDX:0-7)"
    problems = check_job(detail, TABLE)
    assert any("GPUs 4,5,6,7 have 0 local cores" in p for p in problems)


def test_spread_allocation_passes():
    detail = "   Nodes=h100n1 CPU_IDs=0-7,16-23 Mem=64000 GRES=gpu:h100:8(IDX:0-7)"
    assert check_job(detail, TABLE) == []


def test_remote_core_is_reported():
    # notes: 2 GPUs IDX:4-5 with CPU_IDs=16 is fine; add core 3 (socket 0) and it is remote to both
    assert check_job("Nodes=h100n1 CPU_IDs=16 Mem=4000 GRES=gpu:h100:2(IDX:4-5)", TABLE, cpus_per_gpu=0) == []
    problems = check_job("Nodes=h100n1 CPU_IDs=3,16-23 Mem=4000 GRES=gpu:h100:2(IDX:4-5)", TABLE)
    assert problems == ["h100n1: cores 3 are remote to all of the job's GPUs"]


def test_a100_uneven_split_needs_cores_in_the_same_ratio():
    bad = "Nodes=a100n1 CPU_IDs=0-11,16-27 Mem=1 GRES=gpu:a100:3(IDX:0,2-3)"  # measured with plain cpus-per-gpu
    assert check_job(bad, TABLE, cpus_per_gpu=8) == ["a100n1: GPUs 2,3 have 12 local cores of the job's, need 16"]
    good = "Nodes=a100n1 CPU_IDs=0-23 Mem=1 GRES=gpu:a100:3(IDX:0,2-3)"
    assert check_job(good, TABLE, cpus_per_gpu=8) == []


def test_multi_node_lines():
    text = ("   Nodes=h100n1 CPU_IDs=0-3 Mem=1 GRES=gpu:h100:1(IDX:0)\n"
            "   Nodes=h100n2 CPU_IDs=0-3 Mem=1 GRES=gpu:h100:1(IDX:7)\n")
    allocs = parse_job_detail(text)
    assert [a.node for a in allocs] == ["h100n1", "h100n2"]
    assert len(check_job(text, TABLE)) == 2  # h100n2: GPU 7 has no local core, cores 0-3 remote


def test_no_detail_lines_is_a_problem_not_a_pass():
    assert check_job("JobId=5 JobState=PENDING", TABLE) != []


# Allocations measured in the lab (22.05.8) for jobs as users write them (docs/gpusub.md "Placement");
# the acceptance rule of issue 8 is one local core per GPU (cpus_per_gpu=1) and no core remote to all.

def test_one_task_without_cpu_count_gets_def_cpu_per_gpu_next_to_each_gpu():
    # --gres=gpu:a100:4, one task, DefCpuPerGPU=4: 16 cores, 8 on each socket
    assert check_job("Nodes=a100n1 CPU_IDs=0-7,16-23 Mem=1 GRES=gpu:a100:4(IDX:0-3)", TABLE, cpus_per_gpu=1) == []


def test_one_task_few_cpus_eight_gpus_fails():
    # --gres=gpu:h100:8 -c 8, one task: its 8 cores come from socket 0
    problems = check_job("Nodes=h100n1 CPU_IDs=0-7 Mem=1 GRES=gpu:h100:8(IDX:0-7)", TABLE, cpus_per_gpu=1)
    assert problems == ["h100n1: GPUs 4,5,6,7 have 0 local cores of the job's, need 4"]


def test_one_core_per_gpu_is_weaker_than_the_even_share():
    # plain --gres=gpu:h100:4 with cores 0-7 held: GPUs 0-2 + 6, 8 cores on each socket
    text = "Nodes=h100n1 CPU_IDs=8-15,20-27 Mem=1 GRES=gpu:h100:4(IDX:0-2,6)"
    assert check_job(text, TABLE, cpus_per_gpu=1) == []
    assert check_job(text, TABLE) == ["h100n1: GPUs 0,1,2 have 8 local cores of the job's, need 12"]


def test_plain_ntasks_shape_per_release():
    """--gres=gpu:h100:8 --ntasks=8 -c 2 under plain sbatch on an idle node (docs/gpusub.md, the locality tables):
    22.05.8 and 24.11.5 pack the tasks on socket 0 (the rule fails); 26.05.5 spreads them (it holds)."""
    from slurm_gpu.slurm.release import PLAIN_SPREADS_TASKS_OVER_SOCKETS, since

    measured = {(22, 5, 8): "0-15", (24, 11, 5): "0-15", (26, 5, 5): "0-7,16-23"}
    for version, cpus in measured.items():
        problems = check_job(f"Nodes=h100n1 CPU_IDs={cpus} Mem=1 GRES=gpu:h100:8(IDX:0-7)", TABLE, cpus_per_gpu=1)
        assert (problems == []) is since(PLAIN_SPREADS_TASKS_OVER_SOCKETS, version), (version, problems)
