#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=never pends=PartitionTimeLimit gpus=4 nodes=1 policy=refuse
#SBATCH --gres=gpu:h100:4
#SBATCH --time=3-00:00:00

torchrun --standalone --nproc_per_node=4 train.py
