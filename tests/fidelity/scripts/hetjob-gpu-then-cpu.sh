#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A GPU part and a CPU part for evaluation, both steps in the background. Held (compared, not run).
# fidelity-expect: mode=hold
#SBATCH -n 1 --gres=gpu:1 -t 10
#SBATCH hetjob
#SBATCH -n 1 -c 2 -t 10
srun --het-group=1 python prep.py &
srun --het-group=0 python train.py &
wait
