#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A heterogeneous job: a CPU part for data loading, a GPU part for training. Held (compared, not run): the
# policy routes it to the interactive partition, where a component that cannot start blocks the lab.
# fidelity-expect: mode=hold nodes=1
#SBATCH --ntasks=1 --cpus-per-task=1 --time=10
#SBATCH hetjob
#SBATCH --ntasks=1 --gpus-per-node=1 --time=10
srun --het-group=0 python prep.py
srun --het-group=1 python train.py
