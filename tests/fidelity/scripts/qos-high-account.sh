#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=2 python=2 gpus=2 nodes=1
#SBATCH --account=hpc-priority
#SBATCH --qos=high
#SBATCH --partition=batch
#SBATCH --gres=gpu:h100:2
#SBATCH --time=12:00:00

torchrun --standalone --nproc_per_node=2 train.py
