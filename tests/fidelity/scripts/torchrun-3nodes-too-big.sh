#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=refuse
#SBATCH --nodes=3
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:h100:8
#SBATCH --time=12:00:00

srun torchrun --nnodes=3 --nproc_per_node=8 train.py
