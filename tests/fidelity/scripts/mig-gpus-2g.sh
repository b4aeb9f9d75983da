#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=refuse
#SBATCH --gpus=2g.20gb:1
#SBATCH --time=30

python eval.py
