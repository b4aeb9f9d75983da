#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1
#SBATCH --constraint="a100|h100"
#SBATCH --gpus-per-node=1
#SBATCH --time=10
echo "features asked: a100|h100, GPUs per node: $SLURM_GPUS_PER_NODE"
python eval.py
