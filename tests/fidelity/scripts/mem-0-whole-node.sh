#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=hold gpus=1 nodes=1
#SBATCH --gres=gpu:a100:1
#SBATCH --mem=0
#SBATCH --time=60

python train.py
