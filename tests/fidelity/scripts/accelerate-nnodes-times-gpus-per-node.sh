#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# accelerate over nodes, one launcher per node; the process count from the allocation.
# fidelity-expect: mode=run batch=1 launch.accelerate=2 worker.accelerate=2 python=2 gpus=2 nodes=2 tasks=2
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=1
#SBATCH --cpus-per-task=4
#SBATCH --time=15
export NUM_PROCESSES=$((SLURM_NNODES * SLURM_GPUS_PER_NODE))
export MAIN_IP=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
srun bash -c 'accelerate launch --num_machines $SLURM_NNODES --num_processes $NUM_PROCESSES \
  --machine_rank $SLURM_NODEID --main_process_ip $MAIN_IP --main_process_port 29500 train.py'
