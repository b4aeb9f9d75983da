#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=hold exists=no nodes=3 gpus=24 tasks=3 policy=refuse
# (3 nodes of 8 H100 do not exist: plain sbatch refuses this (torchrun-3nodes-too-big), but Slurm 22.05
#  skips that check for a held job, so `sbatch --hold` takes it; gpusub's policy refuses it as it
#  refuses it unheld: exists=no says the cluster can never run it)
#SBATCH --nodes=3
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=h100:8
#SBATCH --time=12:00:00

srun torchrun --nnodes=3 --nproc_per_node=8 train.py
