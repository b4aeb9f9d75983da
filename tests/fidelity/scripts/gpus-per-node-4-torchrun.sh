#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=4 python=4 gpus=4 nodes=1
#SBATCH --gpus-per-node=4
#SBATCH --time=6:00:00

torchrun --standalone --nproc_per_node=4 train.py
