#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=4 python=4 gpus=1 nodes=1 array=0-3
#SBATCH --array=0-3
#SBATCH --gres=gpu:a100:1
#SBATCH --time=10
#SBATCH --output=logs/fold_%A_%a.out

python train.py --fold $SLURM_ARRAY_TASK_ID
