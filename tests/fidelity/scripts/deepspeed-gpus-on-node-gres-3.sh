#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.deepspeed=1 worker.deepspeed=3 python=3 gpus=3 nodes=1
#SBATCH --gres=gpu:3
#SBATCH --time=20
#SBATCH --job-name=ds-3
deepspeed --num_gpus "$SLURM_GPUS_ON_NODE" train.py --zero 2
