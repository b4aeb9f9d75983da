#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Submitted as `cat job.sh | sbatch -t 15` (piped; options on the command line).
# fidelity-submit: stdin
# fidelity-argv: -t 15
# fidelity-expect: mode=run batch=1 launch.deepspeed=1 worker.deepspeed=2 python=2 gpus=2 nodes=1
#SBATCH --nodes=1
#SBATCH --gpus-per-node=2
#SBATCH --mem=32G
export MASTER_PORT=$((10000 + SLURM_JOB_ID % 50000))
deepspeed --num_gpus=$SLURM_GPUS_PER_NODE --master_port $MASTER_PORT finetune.py --deepspeed ds_config.json
