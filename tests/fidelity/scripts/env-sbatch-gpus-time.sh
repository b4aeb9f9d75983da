#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=2 python=2 gpus=2 nodes=1
# fidelity-env: SBATCH_GPUS=h100:2 SBATCH_TIMELIMIT=25
#SBATCH --job-name=from-env

torchrun --standalone --nproc_per_node=2 train.py
