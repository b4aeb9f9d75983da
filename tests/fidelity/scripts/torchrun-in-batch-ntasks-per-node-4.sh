#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=4 python=4 gpus=4 nodes=1 tasks=4
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=4
#SBATCH --gres=gpu:h100:4
#SBATCH --cpus-per-task=2
#SBATCH --time=30

# one torchrun in the batch step; the 4 tasks are only the allocation's shape
torchrun --standalone --nproc_per_node=4 train.py
