#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1 cpus=4
# fidelity-env: SBATCH_TIMELIMIT=20 SBATCH_CPUS_PER_GPU=4
# (SBATCH_* variables override #SBATCH lines: the job gets 20 minutes, not 15)
#SBATCH --gpus=h100:1
#SBATCH --time=15

python train.py
