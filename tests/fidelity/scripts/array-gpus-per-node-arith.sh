#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=2 python=2 gpus=1 nodes=1 array=0-1
#SBATCH --array=0-1
#SBATCH --gpus-per-node=1
#SBATCH --time=10
WORKERS=$((SLURM_GPUS_PER_NODE * 4))
python train.py --fold "$SLURM_ARRAY_TASK_ID" --dataloader-workers "$WORKERS"
