#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A feature constraint that names the GPU, and an untyped request.
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1
#SBATCH --constraint=h100
#SBATCH --gres=gpu:1
#SBATCH --time=10
python train.py
