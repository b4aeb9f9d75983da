#!/bin/bash
# Rendered by gpusub 0.1.0 for Slurm 23.11.10; the job's own script runs
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

# The payload's arguments, exactly as given to gpusub.
set -- --lr=3e-4
# Per-task shim: rank variables and the GPU order (entry LOCAL_RANK of CUDA_VISIBLE_DEVICES is
# the task's own GPU), then the payload.
SLURM_GPU_SHIM='export LOCAL_RANK="${SLURM_LOCALID:-0}" RANK="${SLURM_PROCID:-0}" WORLD_SIZE="${SLURM_NTASKS:-1}"
exec "$@"'
exec srun --cpu-bind=cores --mem-bind=local --distribution=block:block --gres-flags=allow-task-sharing bash -c "$SLURM_GPU_SHIM" slurm-gpu-shim /home/alice/.gpusub/spool/train.sh.x1y2z3/payload "$@"
