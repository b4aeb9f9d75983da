#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=2 python=2 gpus=2 nodes=1 mem=40960
#SBATCH --gres=gpu:h100:2
#SBATCH --mem-per-gpu=20G
#SBATCH --time=60

torchrun --standalone --nproc_per_node=2 train.py
