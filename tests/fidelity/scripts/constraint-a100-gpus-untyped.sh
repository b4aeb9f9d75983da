#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Sites pick the GPU with a feature: -C a100 and an untyped count, default partition.
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1
#SBATCH -C a100
#SBATCH --gpus=1
#SBATCH -t 10
python eval.py
