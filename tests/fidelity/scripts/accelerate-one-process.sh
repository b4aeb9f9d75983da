#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.accelerate=1 worker.accelerate=1 python=1 gpus=1 nodes=1
#SBATCH --gpus=h100:1
#SBATCH --mem=32G
#SBATCH --time=3:00:00

accelerate launch --num_processes=1 --main_process_port=12346 finetune.py --epochs 3
