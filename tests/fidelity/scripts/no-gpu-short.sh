#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=0 nodes=1
#SBATCH --job-name=preprocess
#SBATCH --cpus-per-task=4
#SBATCH --mem=8G
#SBATCH --time=15

python prep.py --workers $SLURM_CPUS_PER_TASK
