#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=2 python=2 gpus=2 nodes=1
# fidelity-args: 2 --model llama --lr 1e-5
#SBATCH --gres=gpu:h100:2
#SBATCH --time=0-01:00

NPROC=${1:-1}
shift
torchrun --standalone --nproc_per_node=$NPROC finetune.py "$@"
