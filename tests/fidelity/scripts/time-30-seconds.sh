#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=0 nodes=1
#SBATCH --time=0:30

python eval.py
