#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=8 gpus=8 nodes=1 tasks=8
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=h100:8
#SBATCH --cpus-per-task=4
#SBATCH --time=00:15:00

srun --gpu-bind=closest python train.py
