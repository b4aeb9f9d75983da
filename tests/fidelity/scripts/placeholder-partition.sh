#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=refuse
#SBATCH --partition=<partition>
#SBATCH --gres=gpu:1
#SBATCH --time=30

python train.py
