#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1
#SBATCH --job-name=<job_name>
#SBATCH --mail-user=<your_email>
#SBATCH --mail-type=BEGIN,END,FAIL
#SBATCH --gres=gpu:a100:1
#SBATCH --time=30

python train.py
