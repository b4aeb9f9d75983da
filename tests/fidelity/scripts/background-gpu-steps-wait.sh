#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=2 gpus=2 nodes=1 tasks=2
#SBATCH --ntasks=2
#SBATCH --gpus-per-task=1
#SBATCH --time=10
srun --ntasks=1 --exact python train.py --seed 1 &
srun --ntasks=1 --exact python train.py --seed 2 &
wait
echo "both seeds done"
