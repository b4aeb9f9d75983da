#!/bin/bash
# Rendered by gpusub 0.1.0 for Slurm 23.11.10; the job's own script runs
# unchanged as the payload at the end.
# Decision: class=debug partition=interactive qos=debug gres=- isolation=-
#SBATCH --account=ml
#SBATCH --comment="a#b c"
#SBATCH --job-name="it's \"quoted\" $(x)"
#SBATCH --ntasks=2
#SBATCH --partition=interactive
#SBATCH --qos=debug
#SBATCH --time=20

# slurm-gpu:hook checkpoint
# (signal and requeue handling goes here)
# slurm-gpu:hook end

# The job's environment as plain sbatch sets it for the user's own options (docs/gpusub.md, "The job's
# environment"): what sbatch derives from the options gpusub typed or added, back to the user's values.
export SBATCH_ACCOUNT=ml
# bash counts the payload one shell level below this one; under sbatch it is the batch shell itself.
if [ "${SHLVL:-1}" -le 1 ] 2>/dev/null; then unset SHLVL; else export SHLVL=$((SHLVL - 1)); fi
# The job's own script, byte for byte, with its arguments exactly as given to gpusub.
set -- --in 'a b' '$HOME' 'it'"'"'s'
gpusub_dir=$(mktemp -d "${TMPDIR:-/tmp}/gpusub.XXXXXXXXXX") || { echo "gpusub: cannot create a private directory under ${TMPDIR:-/tmp}" >&2; exit 1; }
gpusub_payload="$gpusub_dir"/job.sh
cat > "$gpusub_payload" <<'GPUSUB_PAYLOAD_22853b18'
#!/bin/bash
srun hostname
GPUSUB_PAYLOAD_22853b18
chmod 700 "$gpusub_payload"
# Run it once, as sbatch would, and stay its parent: signals Slurm sends to the batch shell alone
# (--signal=B:...) are passed on to it; the job's exit code is the script's.
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
