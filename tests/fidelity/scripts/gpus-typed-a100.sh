#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1
#SBATCH --gpus=a100:1
#SBATCH --time=1:00:00

python finetune.py
