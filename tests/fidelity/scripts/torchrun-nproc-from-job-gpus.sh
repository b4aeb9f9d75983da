#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=2 python=2 gpus=2 nodes=1
#SBATCH --job-name=pl_ddp_test
#SBATCH --nodes=1
#SBATCH --gpus=a100:2
#SBATCH --time=15

NUM_GPUS=$(echo $SLURM_JOB_GPUS | tr ',' '\n' | wc -l)
srun torchrun --nnodes=$SLURM_NNODES --nproc_per_node=$NUM_GPUS train.py
