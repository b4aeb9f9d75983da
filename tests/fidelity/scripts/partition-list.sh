#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1
#SBATCH --partition=interactive,batch
#SBATCH --gres=gpu:h100:1
#SBATCH --time=30

python train.py
