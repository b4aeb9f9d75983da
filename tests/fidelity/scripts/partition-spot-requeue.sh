#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1
#SBATCH --partition=spot
#SBATCH --qos=spot
#SBATCH --gres=gpu:a100:1
#SBATCH --requeue
#SBATCH --signal=B:USR1@120
#SBATCH --time=2:00:00

trap 'echo checkpointing' USR1
python train.py --resume
