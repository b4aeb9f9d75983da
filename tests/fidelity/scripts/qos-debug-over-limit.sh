#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=never pends=QOSMaxWallDurationPerJobLimit gpus=4 nodes=1 policy=refuse
# (QOS debug allows 30 minutes and 2 GPUs; the partition default time is 1 hour)
#SBATCH -q debug
#SBATCH -p interactive
#SBATCH --gres=gpu:h100:4

torchrun --standalone --nproc_per_node=4 train.py
