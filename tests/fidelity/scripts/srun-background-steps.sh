#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=2 gpus=0 nodes=1 tasks=2
#SBATCH --ntasks=2
#SBATCH --cpus-per-task=1
#SBATCH --mem-per-cpu=1G
#SBATCH --time=10

srun --ntasks=1 --exact python eval.py --part 1 &
srun --ntasks=1 --exact python eval.py --part 2 &
wait
