#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.accelerate=2 worker.accelerate=4 python=4 gpus=4 nodes=2 tasks=2
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=h100:2
#SBATCH --cpus-per-task=4
#SBATCH --time=45

head=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)
export LAUNCHER="accelerate launch --num_processes $((SLURM_NNODES * 2)) --num_machines $SLURM_NNODES \
    --main_process_ip $head --main_process_port 29500"
srun bash -c "$LAUNCHER --machine_rank \$SLURM_NODEID train.py --bf16"
