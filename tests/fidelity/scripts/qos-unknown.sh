#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=refuse
#SBATCH --qos=premium
#SBATCH --gres=gpu:h100:1
#SBATCH --time=30

python train.py
