#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=2 python=2 gpus=2 nodes=1
#SBATCH -N 1
#SBATCH --gres=gpu:a100:2
#SBATCH -t 30

python -m torch.distributed.run --nproc_per_node=2 --master_port=29501 train.py --fp16
