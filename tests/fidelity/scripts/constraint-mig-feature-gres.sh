#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1
#SBATCH -C mig
#SBATCH --gres=gpu:1
#SBATCH -t 5
python prep.py
