#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1
#SBATCH -p interactive
#SBATCH -q debug
#SBATCH --gpus=a100:1
#SBATCH -t 20

python eval.py
