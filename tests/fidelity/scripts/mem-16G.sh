#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1 mem=16384
#SBATCH --gres=gpu:h100:1
#SBATCH --mem=16G
#SBATCH --time=60

python train.py
