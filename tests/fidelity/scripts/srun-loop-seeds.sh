#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=3 gpus=1 nodes=1 tasks=1
#SBATCH --gres=gpu:h100:1
#SBATCH --time=25

for seed in 1 2 3; do
    srun --ntasks=1 python train.py --seed $seed
done
