#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=2 nodes=1
#SBATCH --gres=gpu:2
#SBATCH --time=2:00:00

python train.py
