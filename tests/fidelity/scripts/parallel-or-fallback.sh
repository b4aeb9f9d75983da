#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# GNU parallel runs one srun per input, or a plain loop where it is not installed.
# fidelity-expect: mode=run batch=1 python=3 gpus=0 nodes=1 tasks=3
#SBATCH --ntasks=3
#SBATCH --cpus-per-task=1
#SBATCH --mem-per-cpu=500M
#SBATCH --time=10
if command -v parallel >/dev/null 2>&1; then
  parallel -j "$SLURM_NTASKS" 'srun -n1 -N1 --exact python eval.py --part {}' ::: 1 2 3
else
  for part in 1 2 3; do
    srun -n1 -N1 --exact python eval.py --part "$part" &
  done
  wait
fi
