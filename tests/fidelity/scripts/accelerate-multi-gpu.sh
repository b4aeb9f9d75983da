#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.accelerate=1 worker.accelerate=4 python=4 gpus=4 nodes=1
#SBATCH --job-name=accel
#SBATCH --nodes=1
#SBATCH --gres=gpu:a100:4
#SBATCH --cpus-per-task=8
#SBATCH --time=02:00:00

export HF_HOME=$PWD/.cache/huggingface
accelerate launch --num_processes 4 --multi_gpu --mixed_precision bf16 train.py \
    --output_dir outputs/run1
