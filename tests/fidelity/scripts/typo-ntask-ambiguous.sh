#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=refuse
#SBATCH --ntask=4
#SBATCH --gres=gpu:4
#SBATCH --time=30

srun python train.py
