#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A feature constraint that names the GPU, and an untyped request.
# fidelity-known: plain,plugin-sbatch issue 19 item 3: the policy routes the short job to the interactive partition and resolves the untyped request to its default type, a100, whose node lacks the feature h100 (sbatch: Requested node configuration is not available)
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1
#SBATCH --constraint=h100
#SBATCH --gres=gpu:1
#SBATCH --time=10
python train.py
