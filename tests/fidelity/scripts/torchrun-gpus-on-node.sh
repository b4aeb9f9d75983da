#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=2 python=2 gpus=2 nodes=1
#SBATCH --gpus-per-node=h100:2
#SBATCH --time=20:30
#SBATCH --output=logs/%x-%j.out

export OMP_NUM_THREADS=4
torchrun --nproc-per-node=$SLURM_GPUS_ON_NODE --standalone train.py --lr 3e-4
