# SPDX-License-Identifier: Apache-2.0
"""The hooks' view of a static-MIG job's slices against Slurm's own (issue 20 items 4 and 6): the MIG UUIDs of
CUDA_VISIBLE_DEVICES (set by Slurm's gpu/nvml; 22.05.8 gives them to the Prolog/Epilog too, measured in the
lab) are looked up in the node's NVML. The lab test tests/lab/test_mig_node_lab.py runs it end to end."""

from __future__ import annotations

from slurm_gpu.node.model import GpuId, MigDevice, job_from_env, mig_view

U1, U2 = "MIG-0c0c963c-a316-5403-0c59-cda7f3a5e534", "MIG-ea091916-6301-0dd8-7dae-85eee43459bc"
DEVICES = (GpuId("", 0, 0, "00000000:10:00.0", "GPU-aaaa"), GpuId("", 2, 2, "00000000:20:00.0", "GPU-cccc"))


def _job(gpus: str, cvd: str):
    job = job_from_env({"SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": gpus, "CUDA_VISIBLE_DEVICES": cvd})
    assert job is not None
    return job


def test_cvd_mig_uuids_are_read_beside_slurm_ids():
    job = _job("14", U1)
    assert job.gpu_tokens == ("14",) and job.mig_uuids == (U1,)
    assert _job("0,1", "0,1").mig_uuids == ()  # whole GPUs: nothing to look up


def test_a_known_slice_names_its_parent_and_instance_ids():
    slices, problems = mig_view(_job("14", U1), (MigDevice(2, 13, 0, U1), MigDevice(0, 3, 0, U2)), DEVICES)
    assert slices == [f"{U1}=GPU 2/minor 2/00000000:20:00.0/GPU-cccc GI 13 CI 0"] and problems == []


def test_an_unknown_slice_and_a_count_mismatch_are_the_nodes_problems():
    slices, problems = mig_view(_job("3,14", U1), (MigDevice(0, 3, 0, U2),), DEVICES)
    assert slices == []
    assert problems == [f"Slurm gave the job MIG device {U1}, which this node's NVML does not have "
                        "(1 MIG devices here)",
                        "SLURM_JOB_GPUS holds 2 ids, CUDA_VISIBLE_DEVICES 1 MIG devices"]
