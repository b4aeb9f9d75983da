#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-argv: --gpus-per-socket=1 --sockets-per-node=2 --exclusive --time=10
# (--exclusive: Slurm gives one GPU per socket its cores span, so on a shared node the count is 1 or 2
# depending on which cores are free; measured on 22.05.8. The whole node spans both sockets.)
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=2 python=2 gpus=2 nodes=1
echo "per socket: $SLURM_GPUS_PER_SOCKET"
torchrun --standalone --nproc_per_node=$((SLURM_GPUS_PER_SOCKET * 2)) train.py
