#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=refuse
#SBATCH --gpu-per-node=2
#SBATCH --time=30

torchrun --standalone --nproc_per_node=2 train.py
