#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=never pends=PartitionTimeLimit gpus=1 nodes=1 policy=refuse
#SBATCH --gres=gpu:h100:1
#SBATCH --time=UNLIMITED

python train.py
