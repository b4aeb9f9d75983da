#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1 cpus=6
#SBATCH --cpus-per-task=6
#SBATCH --gpus=1
#SBATCH --time=10
export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK
export MKL_NUM_THREADS=$SLURM_CPUS_PER_TASK
python prep.py --num-workers "$((SLURM_CPUS_PER_TASK - 1))"
