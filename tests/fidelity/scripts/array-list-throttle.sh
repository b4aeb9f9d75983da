#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=3 python=3 gpus=1 nodes=1 array=1,4,7
#SBATCH -a 1,4,7%2
#SBATCH --gpus-per-node=1
#SBATCH -t 5

python eval.py --shard $SLURM_ARRAY_TASK_ID
