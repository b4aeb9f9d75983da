#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=4 python=4 gpus=4 nodes=1 tasks=1
#SBATCH --job-name=ddp-standalone
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:h100:4
#SBATCH --cpus-per-task=16
#SBATCH --mem=64G
#SBATCH --time=00:10:00

echo "running on $(hostname) with GPUs $CUDA_VISIBLE_DEVICES"
torchrun --standalone --nproc_per_node=4 train.py --epochs 1 --batch-size 64
