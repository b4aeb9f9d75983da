#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=4 gpus=2 nodes=1 tasks=2
#SBATCH --ntasks=2
#SBATCH --gres=gpu:a100:2
#SBATCH --time=30

srun --ntasks=1 python prep.py --data /scratch/data
srun python train.py
srun -n1 python eval.py
echo done
