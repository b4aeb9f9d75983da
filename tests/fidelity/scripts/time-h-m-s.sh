#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1
#SBATCH --gres=gpu:a100:1
#SBATCH --time=02:00:00

python train.py
