#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.mpirun=1 worker.mpirun=4 python=4 gpus=4 nodes=1 tasks=4
#SBATCH -N 1
#SBATCH --ntasks=4
#SBATCH --gpus-per-task=1
#SBATCH --time=30

mpirun -np 4 python train.py
