#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=8 python=8 gpus=8 nodes=1
#SBATCH --nodes=1
#SBATCH --gres=gpu:h100:8
#SBATCH --exclusive
#SBATCH --time=12:00:00

torchrun --standalone --nproc_per_node=8 train.py
