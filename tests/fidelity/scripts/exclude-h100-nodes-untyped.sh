#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Only the A100 node is left: -x the H100 nodes, an untyped GPU.
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1
#SBATCH --exclude=h100n1,h100n2
#SBATCH --gpus=1
#SBATCH --time=10
python eval.py
