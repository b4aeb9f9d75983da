#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=never pends=QOSMaxGRESPerJob nodes=2 gpus=16 tasks=16 policy=refuse
# (fits the lab, but QOS normal allows 8 GPUs per job: sbatch takes it and it waits forever)
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=h100:8
#SBATCH --time=1-00

mpirun -np 16 python train.py
