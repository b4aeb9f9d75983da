#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.torchrun=2 worker.torchrun=4 python=4 gpus=4 nodes=2 tasks=2
#SBATCH --job-name=multinode
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=h100:2
#SBATCH --cpus-per-task=8
#SBATCH --time=20

head_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
echo "Nodelist: $SLURM_JOB_NODELIST head: $head_node"
srun torchrun --nnodes=$SLURM_NNODES --nproc_per_node=2 \
    --rdzv_id=$SLURM_JOB_ID --rdzv_backend=c10d --rdzv_endpoint=$head_node:29500 \
    train.py --config configs/base.yaml
