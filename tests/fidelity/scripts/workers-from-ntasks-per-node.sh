#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# One background worker per task slot, counted from $SLURM_NTASKS_PER_NODE.
# fidelity-expect: mode=run batch=1 python=2 gpus=2 nodes=1 tasks=2
#SBATCH --ntasks=2
#SBATCH --ntasks-per-node=2
#SBATCH --gpus-per-task=1
#SBATCH --time=10
for i in $(seq 1 "$SLURM_NTASKS_PER_NODE"); do
  python eval.py --shard "$i" --of "$SLURM_NTASKS_PER_NODE" &
done
wait
