#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-argv: --gpus-per-socket=1 --sockets-per-node=2 --time=10
# (held: at its start Slurm gives one GPU per socket its cores span, 1 or 2 on a shared node depending on
# which cores are free, measured on 22.05.8; with --exclusive the debug QOS's per-job GPU cap counts the
# whole node and it never starts. The record as submitted is compared.)
# fidelity-expect: mode=hold gpus=2 nodes=1
echo "per socket: $SLURM_GPUS_PER_SOCKET"
torchrun --standalone --nproc_per_node=$((SLURM_GPUS_PER_SOCKET * 2)) train.py
