#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=refuse
#SBATCH --nodes=one
#SBATCH --gres=gpu:1

python train.py
