#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=2 python=2 gpus=2 nodes=1
#SBATCH -G 2
#SBATCH -t 10
#SBATCH -c 8

torchrun --standalone --nproc_per_node=gpu train.py
