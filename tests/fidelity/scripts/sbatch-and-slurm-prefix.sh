#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=2 gpus=2 nodes=1 tasks=2
#SLURM --ntasks=2
#SBATCH --gres=gpu:h100:2
#SBATCH --time=30

srun python train.py
