#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=2 gpus=2 nodes=1 tasks=2
#SBATCH --ntasks=2
#SBATCH --gpus-per-node=2
#SBATCH --time=10
srun bash -c 'n=$(echo "$CUDA_VISIBLE_DEVICES" | tr , "\n" | grep -c .); [ "$n" = "$SLURM_GPUS_PER_NODE" ] && python eval.py'
