#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=2 python=3 gpus=2 nodes=1
#SBATCH --job-name=pipeline
#SBATCH --output=logs/%x-%j.out
#SBATCH --error=logs/%x-%j.err
#SBATCH --gres=gpu:a100:2
#SBATCH --cpus-per-task=8
#SBATCH --time=30

set -euo pipefail
echo "SLURM_JOB_ID=$SLURM_JOB_ID on $SLURM_JOB_NODELIST"
torchrun --standalone --nproc_per_node=2 train.py
python eval.py --ckpt outputs/last.ckpt
