#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=refuse
#SBATCH --gpus-per-node=a100:8
#SBATCH --time=1:00:00

torchrun --nproc_per_node=8 train.py
