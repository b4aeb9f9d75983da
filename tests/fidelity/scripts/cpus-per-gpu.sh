#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=2 python=2 gpus=2 nodes=1 cpus=8
#SBATCH --gpus=h100:2
#SBATCH --cpus-per-gpu=4
#SBATCH --time=60

torchrun --standalone --nproc_per_node=2 train.py
