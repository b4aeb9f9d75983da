# SPDX-License-Identifier: Apache-2.0
"""Slurm's GPU ids -> /dev/nvidia minors from gres.conf, and the whole-GPU identity check (issue 20 item 6;
pure). slurmd numbers a node's GPUs in the order of the File= devices of the gres.conf lines that apply to
it (a public observation: a prolog's SLURM_JOB_GPUS=1 is the node's second gres.conf line; docs/hooks.md)."""

from __future__ import annotations

import pytest

from slurm_gpu.node.model import GpuId, identity_problems, slurm_gpu_minors

LAB = """# the lab's emitted lines
AutoDetect=off
NodeName=h100n[1-2] Name=gpu Type=h100 File=/dev/nvidia[0-3] Cores=0-15
NodeName=h100n[1-2] Name=gpu Type=h100 File=/dev/nvidia[4-7] Cores=16-31
NodeName=a100n1 Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=16-31
NodeName=a100n1 Name=gpu Type=a100 File=/dev/nvidia[2-3] Cores=0-15
NodeName=a100mig1 AutoDetect=nvml
"""


def test_minors_follow_the_lines_of_the_node() -> None:
    assert slurm_gpu_minors(LAB, "h100n2") == tuple(range(8))
    assert slurm_gpu_minors(LAB, "a100n1") == (0, 1, 2, 3)
    assert slurm_gpu_minors(LAB, "a100mig1") is None  # autodetected: NVML's order
    assert slurm_gpu_minors(LAB, "nosuch") is None
    assert slurm_gpu_minors("Name=gpu File=/dev/nvidia3,/dev/nvidia1\n", "any") == (3, 1)  # no NodeName: every node


@pytest.mark.parametrize("text", [
    "NodeName=n1 Name=gpu MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21\n",  # MIG
    "NodeName=n1 Name=gpu File=/dev/dri/card0\n",  # not an NVIDIA device
    "NodeName=n1 Name=gpu Count=4\n",  # no files
    "NodeName=n[1- Name=gpu File=/dev/nvidia0\n",  # a bad hostlist
    "AutoDetect=nvml\nNodeName=n1 Name=gpu File=/dev/nvidia0\n",
    "",
])
def test_what_cannot_be_told_is_none(text: str) -> None:
    assert slurm_gpu_minors(text, "n1") is None


def test_shards_and_other_gres_lines_are_not_gpus() -> None:
    text = "NodeName=n1 Name=gpu File=/dev/nvidia[0-1]\nNodeName=n1 Name=shard Count=8 File=/dev/nvidia[0-1]\n"
    assert slurm_gpu_minors(text, "n1") == (0, 1)


def test_identity_problems_name_the_two_devices() -> None:
    gpus = (GpuId("2", 2, 5, "00000000:5A:00.0", "GPU-x"), GpuId("3", 3, 3, "", ""))
    (p,) = identity_problems(gpus, tuple(range(8)))
    assert p.startswith("Slurm's GPU 2 is /dev/nvidia2 (gres.conf File=), but the hooks took /dev/nvidia5 (GPU 2 ")
    assert identity_problems(gpus, None) == [] and identity_problems(gpus, (0, 1, 5, 3)) == []
    assert identity_problems((GpuId("9", 9, 9, "", ""),), (0, 1))[0].startswith("Slurm's GPU 9 is past the 2")
    assert identity_problems((GpuId("1", None, None, "", ""),), (0, 1)) == []  # no NVML identity: nothing to say
