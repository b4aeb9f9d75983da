#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=refuse
#SBATCH --partition=mig
#SBATCH --gres=gpu:1g.10gb:1
#SBATCH --time=30

python eval.py
