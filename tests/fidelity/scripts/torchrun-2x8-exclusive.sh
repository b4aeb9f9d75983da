#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=hold nodes=2 gpus=16 tasks=2
# (the whole lab: compared held)
#SBATCH --job-name=llm-pretrain
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=h100:8
#SBATCH --exclusive
#SBATCH --account=hpc-priority
#SBATCH --qos=high
#SBATCH --time=2-00:00:00

srun torchrun --nnodes=$SLURM_NNODES --nproc_per_node=8 --rdzv_backend=c10d \
    --rdzv_endpoint=$(hostname):29500 train.py
