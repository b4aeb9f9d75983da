#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-env: SBATCH_GPUS_PER_NODE=2 SBATCH_TIMELIMIT=15
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=2 python=2 gpus=2 nodes=1
torchrun --standalone --nproc_per_node=$SLURM_GPUS_PER_NODE train.py
