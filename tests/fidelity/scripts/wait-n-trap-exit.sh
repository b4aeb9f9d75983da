#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=2 gpus=1 nodes=1
#SBATCH --gres=gpu:1
#SBATCH --time=10
set -u
trap 'echo "job $SLURM_JOB_ID done"' EXIT
python prep.py &
python eval.py &
wait -n
wait
