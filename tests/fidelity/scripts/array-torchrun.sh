#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=2 launch.torchrun=2 worker.torchrun=4 python=4 gpus=2 nodes=1 array=0-1
#SBATCH --array=0-1
#SBATCH --gres=gpu:h100:2
#SBATCH --time=30

torchrun --standalone --nproc_per_node=2 train.py --sweep-id $SLURM_ARRAY_TASK_ID
