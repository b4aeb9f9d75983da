#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=4 gpus=4 nodes=2 tasks=4
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --gpus-per-node=h100:2
#SBATCH --time=40

srun python3 train.py --dist
