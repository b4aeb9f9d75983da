#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1
# fidelity-argv: -t 25 --job-name=cli-override
#SBATCH --gres=gpu:h100:1

python train.py
