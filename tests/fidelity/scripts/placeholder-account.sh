#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=refuse
#SBATCH --account=<project>
#SBATCH --gres=gpu:1
#SBATCH --time=30

python train.py
