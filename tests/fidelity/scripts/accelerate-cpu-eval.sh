#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.accelerate=1 worker.accelerate=2 python=2 gpus=0 nodes=1
#SBATCH -c 4
#SBATCH -t 10

accelerate launch --cpu --num_processes 2 eval.py --split test
