#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1 tasks=1
#SBATCH -c 8
#SBATCH -n 1
#SBATCH -G h100:1
#SBATCH -t 35

python train.py
