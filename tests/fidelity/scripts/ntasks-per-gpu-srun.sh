#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=4 gpus=2 nodes=1 tasks=4
#SBATCH --gpus=2
#SBATCH --ntasks-per-gpu=2
#SBATCH --time=10
srun python eval.py
