#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1 cpus=2 mem=4096
#SBATCH --gpus-per-node=1
#SBATCH --cpus-per-task=2
#SBATCH --mem-per-cpu=2G
#SBATCH --time=10
printf '%s\n' "gpus/node=$SLURM_GPUS_PER_NODE cpus/task=$SLURM_CPUS_PER_TASK mem/cpu=$SLURM_MEM_PER_CPU"
python eval.py
