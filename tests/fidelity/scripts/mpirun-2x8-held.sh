#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=hold nodes=2 gpus=16 tasks=16
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=h100:8
#SBATCH --time=1-00

mpirun -np 16 python train.py
