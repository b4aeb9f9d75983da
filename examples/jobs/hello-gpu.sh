#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hello-gpu.sh - the job `make demo` submits with gpusub: 2 H100 GPUs for 5 minutes.
# It prints where Slurm put it: node, partition, GPUs and the CPU cores it was given and bound to.
# (In the lab the GPUs are fake device files: nothing here touches a GPU.)
#SBATCH --job-name=hello-gpu
#SBATCH --gres=gpu:h100:2
#SBATCH --time=5
#SBATCH --output=hello-gpu-%j.out

# one line per fact: "hello-gpu: KEY=VALUE", or "hello-gpu.N: ..." from task N when launched by srun
tag=hello-gpu${SLURM_STEP_ID:+.${SLURM_PROCID:-0}}
say() { printf '%s: %s=%s\n' "$tag" "$1" "$2"; }
say node "${SLURMD_NODENAME:-$(hostname -s)}"
say partition "${SLURM_JOB_PARTITION:-}"
say qos "${SLURM_JOB_QOS:-}"
say SLURM_JOB_GPUS "${SLURM_JOB_GPUS:-}"
say CUDA_VISIBLE_DEVICES "${CUDA_VISIBLE_DEVICES:-}"
say SLURM_CPUS_ON_NODE "${SLURM_CPUS_ON_NODE:-}"
# the cores Slurm allocated (abstract core ids of the emulated node)
say CPU_IDs "$(scontrol -d show job "$SLURM_JOB_ID" 2>/dev/null | grep -o 'CPU_IDs=[^ ]*' | head -1 | cut -d= -f2)"
# what this process may really run on (the lab machine's few real CPUs, not the emulated ones)
say Cpus_allowed_list "$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)"
show_bind() { env | grep '^SLURM_CPU_BIND' | sort | sed "s/^/$1: /"; }
if [ -n "${SLURM_STEP_ID:-}" ]; then
  show_bind "$tag"  # already launched by srun: the binding is in this step's environment
else
  # the batch step is not bound; a one-task step shows the binding task/affinity applies
  srun --ntasks=1 bash -c "$(declare -f show_bind); show_bind hello-gpu.0"
fi
echo "$tag: done"
