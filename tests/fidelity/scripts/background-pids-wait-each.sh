#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=3 gpus=1 nodes=1
#SBATCH --gpus=1
#SBATCH --time=10
pids=()
for seed in 1 2 3; do
  python eval.py --seed "$seed" &
  pids+=($!)
done
for pid in "${pids[@]}"; do
  wait "$pid" || exit 1
done
