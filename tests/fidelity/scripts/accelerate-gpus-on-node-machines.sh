#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.accelerate=1 worker.accelerate=2 python=2 gpus=2 nodes=1
#SBATCH --gpus-per-node=2
#SBATCH --time=10
accelerate launch --num_machines "$SLURM_NNODES" --num_processes "$SLURM_GPUS_ON_NODE" --mixed_precision bf16 train.py
