#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.deepspeed=1 worker.deepspeed=4 python=4 gpus=4 nodes=1 tasks=1
#SBATCH --job-name=zero3
#SBATCH --ntasks=1
#SBATCH --gres=gpu:h100:4
#SBATCH --cpus-per-task=16
#SBATCH --mem-per-gpu=32G
#SBATCH --time=08:00:00

export DS_CONFIG=configs/ds_zero3.json
deepspeed --num_gpus 4 train.py --deepspeed $DS_CONFIG
