#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=hold gpus=1 nodes=1 array=0-99
#SBATCH --array=0-99%10
#SBATCH --gres=gpu:1
#SBATCH --time=2:00:00

python train.py --trial $SLURM_ARRAY_TASK_ID
