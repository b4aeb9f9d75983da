#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=3 python=3 gpus=1 nodes=1 array=1,3,5
#SBATCH --array=1-5:2
#SBATCH --gpus=h100:1
#SBATCH --time=15

srun python train.py --seed $SLURM_ARRAY_TASK_ID
