#!/bin/bash
# Rendered by gpusub 0.1.0 for Slurm 25.11.0; the job's own script runs
# unchanged as the payload at the end.
# Decision: class=cpu partition=batch qos=normal gres=- isolation=-
#SBATCH --comment="a#b c"
#SBATCH --job-name="it's \"quoted\" $(x)"
#SBATCH --ntasks=2
#SBATCH --partition=batch
#SBATCH --qos=normal

# slurm-gpu:hook checkpoint
# (signal and requeue handling goes here)
# slurm-gpu:hook end

# The payload's arguments, exactly as given to gpusub.
set -- --in 'a b' '$HOME' 'it'"'"'s'
exec /home/alice/.gpusub/spool/train.sh.x1y2z3/payload "$@"
