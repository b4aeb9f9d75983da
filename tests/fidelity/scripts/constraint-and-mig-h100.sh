#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1
#SBATCH --constraint="h100&mig"
#SBATCH --gpus=1
#SBATCH --time=10
python eval.py
