#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `echo ... | sbatch --gpus=1`: every option on the command line, the script piped.
# fidelity-submit: stdin
# fidelity-argv: --gpus=1 --time=10 --output=logs/pipe-%j.out
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1
echo "GPUs: $SLURM_GPUS on $(hostname)"
python eval.py --gpus "$SLURM_GPUS"
