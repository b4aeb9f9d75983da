#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-env: SBATCH_GPUS_PER_TASK=1
# fidelity-argv: -n 2 -t 10
# fidelity-expect: mode=run batch=1 python=2 gpus=2 nodes=1 tasks=2
srun bash -c '[ -n "$CUDA_VISIBLE_DEVICES" ] && python eval.py'
