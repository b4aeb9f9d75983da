#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=2 python=2 gpus=2 nodes=1 tasks=1
#SBATCH --ntasks=1
#SBATCH --gpus-per-task=2
#SBATCH --time=10
torchrun --standalone --nproc_per_node=$SLURM_GPUS_PER_TASK train.py
