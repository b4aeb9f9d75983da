#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# srun with no GPU option: the step's GPUs come from the job's SLURM_GPUS_PER_TASK.
# fidelity-expect: mode=run batch=1 python=2 gpus=2 nodes=1 tasks=2
#SBATCH --ntasks=2
#SBATCH --gpus-per-task=1
#SBATCH --time=10
srun bash -c '[ -n "$CUDA_VISIBLE_DEVICES" ] && python train.py'
