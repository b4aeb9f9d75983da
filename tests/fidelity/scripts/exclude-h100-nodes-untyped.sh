#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Only the A100 node is left: -x the H100 nodes, an untyped GPU.
# fidelity-known: plugin,plain,plugin-sbatch issue 19 item 3: the untyped request is resolved to h100, on nodes the job excludes
# fidelity-expect: mode=run batch=1 python=1 gpus=1 nodes=1
#SBATCH --exclude=h100n1,h100n2
#SBATCH --gpus=1
#SBATCH --time=10
python eval.py
