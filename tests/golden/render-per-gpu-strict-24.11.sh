#!/bin/bash
# Rendered by gpusub 0.1.0 for Slurm 24.11.5; the job's own script runs
# unchanged as the payload at the end.
# Decision: class=production partition=batch qos=normal gres=gpu:h100:4 isolation=strict
#SBATCH --account=ml
#SBATCH --cpus-per-task=4
#SBATCH --distribution=block:block
#SBATCH --gpus=h100:4
#SBATCH --job-name=train.sh
#SBATCH --ntasks=4
#SBATCH --ntasks-per-socket=4
#SBATCH --partition=batch
#SBATCH --qos=normal
#SBATCH --time=60

# Environment from the binding plan.
export OMP_NUM_THREADS=4

# slurm-gpu:hook checkpoint
# (signal and requeue handling goes here)
# slurm-gpu:hook end

# The job's own script, byte for byte, with its arguments exactly as given to gpusub.
set -- 
gpusub_dir=$(mktemp -d "${TMPDIR:-/tmp}/gpusub.XXXXXXXXXX") || { echo "gpusub: cannot create a private directory under ${TMPDIR:-/tmp}" >&2; exit 1; }
gpusub_payload="$gpusub_dir"/train.sh
cat > "$gpusub_payload" <<'GPUSUB_PAYLOAD_63c01292'
#!/bin/bash
python train.py
GPUSUB_PAYLOAD_63c01292
chmod 700 "$gpusub_payload"
# Per-task shim: rank variables and the GPU order (entry LOCAL_RANK of CUDA_VISIBLE_DEVICES is
# the task's own GPU), then the payload, once per task (gpusub --launch=per-gpu).
SLURM_GPU_SHIM='export LOCAL_RANK="${SLURM_LOCALID:-0}" RANK="${SLURM_PROCID:-0}" WORLD_SIZE="${SLURM_NTASKS:-1}"
export LOCAL_WORLD_SIZE="${SLURM_NTASKS_PER_NODE:-${SLURM_TASKS_PER_NODE%%(*}}"
_ids="${SLURM_STEP_GPUS:-${SLURM_JOB_GPUS:-}}"
if [ -n "$_ids" ] && [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  case "${SLURMD_NODENAME:-}" in
  h100n1|h100n2) declare -A _gs=([0]=0 [1]=0 [2]=0 [3]=0 [4]=1 [5]=1 [6]=1 [7]=1) ;;
  *) declare -A _gs=() ;;
  esac
  IFS=, read -r -a _g <<< "$_ids"; IFS=, read -r -a _c <<< "$CUDA_VISIBLE_DEVICES"
  _order=()
  for _s in $(printf '"'"'%s\n'"'"' "${_gs[@]:-0}" | sort -un); do
    for _i in "${!_g[@]}"; do [ "${_gs[${_g[$_i]}]:-0}" = "$_s" ] && _order+=("${_c[$_i]:-${_g[$_i]}}"); done
  done
  [ ${#_order[@]} -eq ${#_g[@]} ] || _order=("${_c[@]}")
  if [ 1 = 1 ]; then _first=$(( LOCAL_RANK * 1 % ${#_order[@]} )); _order=("${_order[@]:$_first:1}"); fi
  CUDA_VISIBLE_DEVICES=$(IFS=,; echo "${_order[*]}"); export CUDA_VISIBLE_DEVICES
fi
unset _ids _g _c _order _s _i _first _gs
exec "$@"'
srun --cpu-bind=cores --mem-bind=local --distribution=block:block --gpu-bind=closest bash -c "$SLURM_GPU_SHIM" slurm-gpu-shim "$gpusub_payload" "$@"
gpusub_rc=$?
rm -rf -- "$gpusub_dir"
exit "$gpusub_rc"
