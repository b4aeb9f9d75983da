#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A sweep submitted from a driver script's here-document.
# fidelity-submit: stdin
# fidelity-expect: mode=run batch=2 python=2 gpus=1 nodes=1 array=0-1
#SBATCH --array=0-1
#SBATCH --gres=gpu:1
#SBATCH -t 10
#SBATCH -o logs/sweep-%A_%a.out
LRS=(1e-4 3e-4)
python train.py --lr "${LRS[$SLURM_ARRAY_TASK_ID]}" --gpus "$SLURM_GPUS_ON_NODE"
