#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=hold gpus=4 nodes=1
#SBATCH -q debug
#SBATCH -p interactive
#SBATCH --gres=gpu:h100:4

torchrun --standalone --nproc_per_node=4 train.py
