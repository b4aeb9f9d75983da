#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=refuse
#SBATCH --gres=gpu:1
#SBATCH --time=1:0:0:0

python train.py
