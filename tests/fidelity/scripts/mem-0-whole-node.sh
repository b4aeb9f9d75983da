#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1 mem=512000
# (--mem=0: all of the node's memory)
#SBATCH --gres=gpu:a100:1
#SBATCH --mem=0
#SBATCH --time=60

python train.py
