#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=2 gpus=2 nodes=1 tasks=2
#SBATCH --gpus-per-node=h100:2
#SBATCH --ntasks-per-node=2
#SBATCH --time=10
srun --ntasks-per-node="$SLURM_NTASKS_PER_NODE" python eval.py
