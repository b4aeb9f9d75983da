#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Submitted as `sbatch <<EOF ... EOF` (on standard input, no script named).
# fidelity-submit: stdin
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=2 python=2 gpus=2 nodes=1
#SBATCH --job-name=ddp-heredoc
#SBATCH --gpus-per-node=2
#SBATCH --cpus-per-gpu=4
#SBATCH --time=00:20:00
torchrun --standalone --nnodes=1 --nproc_per_node=$SLURM_GPUS_PER_NODE train.py --epochs 1
