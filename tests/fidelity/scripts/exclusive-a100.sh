#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.deepspeed=1 worker.deepspeed=2 python=2 gpus=4 nodes=1
# (Slurm 22.05 gives an --exclusive job every GPU of the node: TRES gres/gpu=4 although it asks for 2)
#SBATCH --gres=gpu:a100:2
#SBATCH --exclusive
#SBATCH --time=60

deepspeed --num_gpus 2 train.py
