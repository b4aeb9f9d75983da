# SPDX-License-Identifier: Apache-2.0
"""The job's environment as plain sbatch sets it (slurm_gpu/render/job_env.py). The lab side: every script of
tests/fidelity compares the batch step's full environment with plain sbatch's (test_gpusub_matches_sbatch)."""

from __future__ import annotations

from slurm_gpu.render.job_env import EnvStep, TresPerTask, exported, restore_steps, sbatch_inputs
from slurm_gpu.slurm.release import spelling_for

OLD, NEW = spelling_for((22, 5, 8)), spelling_for((24, 11, 5))


def test_typed_forms_get_the_users_text_back():
    user = [[("gpus-per-node", "4"), ("cpus-per-task", "8")]]
    sent = [[("cpus-per-task", "8"), ("gpus-per-node", "h100:4"), ("partition", "batch")]]
    steps, tres = restore_steps(user, sent, OLD)
    assert steps == [EnvStep("SLURM_GPUS_PER_NODE", "4")] and tres == []


def test_added_options_are_unset_and_the_binding_one_stays():
    user = [[("ntasks", "8")]]
    sent = [[("ntasks", "8"), ("gpus", "a100:1"), ("mem-per-gpu", "8G"), ("ntasks-per-socket", "4")]]
    steps, _ = restore_steps(user, sent, OLD)
    assert steps == [EnvStep("SLURM_GPUS", None), EnvStep("SLURM_MEM_PER_GPU", None)]


def test_memory_is_written_in_megabytes_as_sbatch_does():
    steps, _ = restore_steps([[("mem-per-gpu", "8G")]], [[("mem-per-gpu", "16G")]], OLD)
    assert steps == [EnvStep("SLURM_MEM_PER_GPU", "8192")]


def test_tres_per_task_from_24_11():
    user, sent = [[("gpus-per-task", "1")]], [[("gpus-per-task", "h100:1")]]
    assert restore_steps(user, sent, OLD)[1] == []
    steps, tres = restore_steps(user, sent, NEW)
    assert steps == []  # 24.11.5 sets no SLURM_GPUS_PER_TASK (measured)
    assert tres == [TresPerTask("SLURM_TRES_PER_TASK", "gres/gpu=1")]


def test_hetjob_components_use_sbatchs_suffixes():
    user = [[("ntasks", "1")], [("gpus-per-node", "1")]]
    sent = [[("ntasks", "1")], [("gpus-per-node", "h100:1")]]
    steps, _ = restore_steps(user, sent, OLD)
    assert steps == [EnvStep("SLURM_GPUS_PER_NODE_HET_GROUP_1", "1"),
                     EnvStep("SLURM_GPUS_PER_NODE_PACK_GROUP_1", "1", True)]


def test_sbatch_inputs_follow_export():
    env = {"SBATCH_GRES": "gpu:1", "SBATCH_ACCOUNT": "ml", "HOME": "/h"}
    assert [s.name for s in sbatch_inputs(env, None)] == ["SBATCH_ACCOUNT", "SBATCH_GRES"]
    assert [s.name for s in sbatch_inputs(env, "ALL,FOO=1")] == ["SBATCH_ACCOUNT", "SBATCH_GRES"]
    assert sbatch_inputs(env, "NONE") == []
    assert [s.name for s in sbatch_inputs(env, "PATH,SBATCH_GRES")] == ["SBATCH_GRES"]
    assert not exported("SBATCH_GRES", "ALL,SBATCH_GRES=gpu:2")  # sbatch sets it from --export itself
