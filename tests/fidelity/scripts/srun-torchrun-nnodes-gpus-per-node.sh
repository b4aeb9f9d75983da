#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The multi-node torchrun idiom: one torchrun per node, nproc from $SLURM_GPUS_PER_NODE.
# fidelity-expect: mode=run batch=1 launch.torchrun=2 worker.torchrun=4 python=4 gpus=4 nodes=2 tasks=2
#SBATCH -N 2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=2
#SBATCH -c 4
#SBATCH -t 0:15:00
head_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
srun torchrun --nnodes=$SLURM_NNODES --nproc_per_node=$SLURM_GPUS_PER_NODE \
  --rdzv_id=$SLURM_JOB_ID --rdzv_backend=c10d --rdzv_endpoint=$head_node:29500 train.py
