#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1
#SBATCH --nodelist=h100n2
#SBATCH --gres=gpu:1
#SBATCH --time=10
python eval.py
