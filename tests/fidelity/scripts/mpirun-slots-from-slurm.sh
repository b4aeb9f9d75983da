#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.mpirun=1 worker.mpirun=4 python=4 gpus=4 nodes=1 tasks=4
#SBATCH --ntasks=4
#SBATCH --nodes=1
#SBATCH --gres=gpu:h100:4
#SBATCH --time=00:30:00

mpirun --bind-to none -x NCCL_DEBUG=INFO -x LD_LIBRARY_PATH python3 train.py
