#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=2 python=2 gpus=2 nodes=1
#SBATCH --gpus-per-n=h100:2
#SBATCH --cpus-per-t=4
#SBATCH --mem-per-g=8G
#SBATCH --time=40

torchrun --standalone --nproc_per_node=2 train.py
