#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=4 gpus=0 nodes=2 tasks=4
#SBATCH --nodes=2
#SBATCH --ntasks=4
#SBATCH --time=5

srun python eval.py
