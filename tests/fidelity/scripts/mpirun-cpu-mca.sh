#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fidelity-expect: mode=run batch=1 launch.mpirun=1 worker.mpirun=2 python=0 gpus=0 nodes=1 tasks=2
#SBATCH --ntasks=2
#SBATCH --time=5

mpirun -n 2 --mca btl self,vader --map-by core hostname
