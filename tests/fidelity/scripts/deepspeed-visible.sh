#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.deepspeed=1 worker.deepspeed=2 python=2 gpus=2 nodes=1
#SBATCH --gres=gpu:a100:2
#SBATCH -t 1-00:00:00

set -e
deepspeed train.py --deepspeed ds_config.json
