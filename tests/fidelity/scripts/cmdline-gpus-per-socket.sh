#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-argv: --gpus-per-socket=1 --sockets-per-node=2 --time=10
# fidelity-expect: mode=run batch=1 launch.torchrun=1 worker.torchrun=2 python=2 gpus=2 nodes=1
echo "per socket: $SLURM_GPUS_PER_SOCKET"
torchrun --standalone --nproc_per_node=$((SLURM_GPUS_PER_SOCKET * 2)) train.py
