#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.deepspeed=1 worker.deepspeed=2 python=2 gpus=2 nodes=1
#SBATCH --gpus-per-node=a100:2
#SBATCH --time=90

deepspeed --num_gpus=2 --master_port=29501 finetune.py --deepspeed ds_zero2.json
