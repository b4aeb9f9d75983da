#!/bin/bash
# Rendered by gpusub 0.1.0 for Slurm 24.11.5; the job's own script runs
# unchanged as the payload at the end.
# Decision: class=production partition=batch qos=normal gres=gpu:h100:4 isolation=shared
#SBATCH --account=ml
#SBATCH --cpus-per-gpu=4
#SBATCH --gres=gpu:h100:4
#SBATCH --gres-flags=enforce-binding
#SBATCH --job-name=llama-7b
#SBATCH --ntasks=4
#SBATCH --partition=batch
#SBATCH --qos=normal
#SBATCH --sockets-per-node=1
#SBATCH --time=2:00:00

# Environment from the binding plan.
export OMP_NUM_THREADS=4

# slurm-gpu:hook checkpoint
# (signal and requeue handling goes here)
# slurm-gpu:hook end

# Binding for every srun inside the payload (srun reads these input variables).
export SLURM_CPU_BIND=cores
export SLURM_MEM_BIND=local
export SLURM_DISTRIBUTION=block:block
export SLURM_GRES_FLAGS=allow-task-sharing
# The payload's arguments, exactly as given to gpusub.
set -- --lr=3e-4
exec /home/alice/.gpusub/spool/train.sh.x1y2z3/payload "$@"
