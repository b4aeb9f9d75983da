#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=2 python=2 gpus=2 nodes=1 cpus=6 mem=8192
#SBATCH --gpus=2
#SBATCH --cpus-per-gpu=3
#SBATCH --mem-per-gpu=4G
#SBATCH --time=10
torchrun --standalone --nproc_per_node=$SLURM_GPUS train.py --workers $SLURM_CPUS_PER_GPU
