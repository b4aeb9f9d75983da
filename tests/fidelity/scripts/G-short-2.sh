#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=2 nodes=1
#SBATCH -G 2
#SBATCH -t 45
#SBATCH -J short-G

python train.py
