#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=refuse
#SBATCH --gres=gpu:v100:1
#SBATCH --time=1:00:00

python train.py
