#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# --export with a list: the job sees only these variables (and SLURM_*), not SBATCH_GPUS_PER_NODE.
# fidelity-env: SBATCH_GPUS_PER_NODE=1
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1
#SBATCH --export=PATH,BASH_ENV,FIDELITY_LOG,FIDELITY_SCRIPT_SHA,HOME
#SBATCH --time=10
python eval.py --gpus "$SLURM_GPUS_PER_NODE"
