#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1 tasks=1
#SBATCH --gres=gpu:h100:1
#SBATCH --time=30
echo "start $(date)"
#SBATCH --gres=gpu:h100:4
#SBATCH --ntasks=4

srun python train.py
