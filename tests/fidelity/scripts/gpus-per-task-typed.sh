#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=2 gpus=2 nodes=1 tasks=2
#SBATCH -N 1
#SBATCH --ntasks=2
#SBATCH --gpus-per-task=h100:1
#SBATCH --cpus-per-task=4
#SBATCH -t 50

srun python3 train.py
