#!/bin/bash
# Rendered by gpusub 0.1.0 for Slurm 25.11.0; the job's own script runs
# unchanged as the payload at the end.
# Decision: class=production partition=batch qos=normal gres=gpu:h100:4 isolation=shared
#SBATCH --account=ml
#SBATCH --cpus-per-task=16
#SBATCH --gres=gpu:h100:4
#SBATCH --job-name=llama-7b
#SBATCH --partition=batch
#SBATCH --qos=normal
#SBATCH --signal=B:USR1@90
#SBATCH --time=2:00:00

# slurm-gpu:hook checkpoint
# (signal and requeue handling goes here)
# slurm-gpu:hook end

# Binding for the srun steps the script starts: srun reads these input variables (an option on the
# srun line still wins; a value already in the job's environment is kept).
[ -n "${SLURM_CPU_BIND+set}" ] || export SLURM_CPU_BIND=cores
# The job's environment as plain sbatch sets it for the user's own options (docs/gpusub.md, "The job's
# environment"): what sbatch derives from the options gpusub typed or added, back to the user's values.
export SBATCH_ACCOUNT=ml
# bash counts the payload one shell level below this one; under sbatch it is the batch shell itself.
if [ "${SHLVL:-1}" -le 1 ] 2>/dev/null; then unset SHLVL; else export SHLVL=$((SHLVL - 1)); fi
# The job's own script, byte for byte, with its arguments exactly as given to gpusub.
set -- --lr=3e-4
gpusub_dir=$(mktemp -d "${TMPDIR:-/tmp}/gpusub.XXXXXXXXXX") || { echo "gpusub: cannot create a private directory under ${TMPDIR:-/tmp}" >&2; exit 1; }
gpusub_payload="$gpusub_dir"/train.sh
cat > "$gpusub_payload" <<'GPUSUB_PAYLOAD_2eecf5b4'
#!/bin/bash
#SBATCH --time=2:00:00
#SBATCH --job-name=llama-7b
#SBATCH --gres=gpu:h100:4
#SBATCH -c 16
torchrun --standalone --nproc_per_node=4 train.py "$@"
GPUSUB_PAYLOAD_2eecf5b4
chmod 700 "$gpusub_payload"
# Run it once, as sbatch would, and stay its parent: signals Slurm sends to the batch shell alone
# (--signal=B:...) are passed on to it; the job's exit code is the script's.
trap 'kill -USR1 "$gpusub_child" 2>/dev/null' USR1
trap ':' TERM
# A command started with & in a shell without job control ignores SIGINT and SIGQUIT; under sbatch the
# script has them at their defaults (scancel --signal=INT, Python's KeyboardInterrupt): restore them.
(trap - INT QUIT; exec "$gpusub_payload" "$@") <&0 &
gpusub_child=$!
while :; do
  wait "$gpusub_child"; gpusub_rc=$?
  kill -0 "$gpusub_child" 2>/dev/null || break
done
rm -rf -- "$gpusub_dir"
exit "$gpusub_rc"
