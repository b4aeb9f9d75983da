#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.torchrun=4 worker.torchrun=16 python=16 gpus=4 nodes=1 tasks=4
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=4
#SBATCH --gres=gpu:a100:4
#SBATCH --time=30

# a common mistake, kept as written: srun starts one torchrun per task, each with 4 workers
srun torchrun --nproc_per_node=4 train.py
