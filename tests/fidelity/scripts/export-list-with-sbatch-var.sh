#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-env: SBATCH_GRES=gpu:1
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1
#SBATCH --export=PATH,BASH_ENV,FIDELITY_LOG,FIDELITY_SCRIPT_SHA,SBATCH_GRES
#SBATCH --time=10
echo "asked for $SBATCH_GRES"
python eval.py
