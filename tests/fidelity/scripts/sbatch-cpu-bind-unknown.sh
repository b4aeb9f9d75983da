#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=refuse
# (--cpu-bind is an srun option; sbatch does not know it)
#SBATCH --ntasks=2
#SBATCH --gpus-per-task=1
#SBATCH --cpu-bind=cores
#SBATCH --time=10

srun python train.py
