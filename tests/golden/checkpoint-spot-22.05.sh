#!/bin/bash
# Rendered by gpusub 0.1.0 for Slurm 22.05.8; the job's own script runs
# unchanged as the payload at the end.
# Decision: class=spot partition=spot qos=spot gres=gpu:h100:1 isolation=shared
#SBATCH --gpus=h100:1
#SBATCH --gres-flags=enforce-binding
#SBATCH --job-name=train.sh
#SBATCH --open-mode=append
#SBATCH --partition=spot
#SBATCH --qos=spot
#SBATCH --requeue
#SBATCH --signal=B:USR2@120
#SBATCH --time=30
trap 'gpusub_ckpt_early=1' USR2  # a stop before the protocol's own trap is held, not fatal

# slurm-gpu:hook checkpoint
# Checkpoint protocol (class spot: checkpoint_required; docs/checkpointing.md). The payload gets GPUSUB_CKPT_DIR (this
# job's directory, the same on every run), GPUSUB_RESTART_COUNT and GPUSUB_RESUME_FROM. On the stop
# signal (the time limit near, or a preemption) every process of the payload and every task of the
# job's running steps gets SIGUSR2 and has 60 s to save and mark; then the job requeues itself
# when the time limit stopped it after a fresh checkpoint, or a preemption did, while it has been
# restarted fewer than 3 times. The reason goes to stderr either way.
gpusub_ckpt_signal=USR2 gpusub_ckpt_grace=60 gpusub_ckpt_lead=120 gpusub_ckpt_max=3
gpusub_ckpt_python='/opt/slurm gpu/bin/python'
gpusub_ckpt_library='/opt/it'"'"'s/lib'
gpusub_ckpt_start=$(date +%s)
gpusub_ckpt_stop='' gpusub_ckpt_why='' gpusub_ckpt_term='' gpusub_ckpt_group='' gpusub_ckpt_pending='' gpusub_ckpt_sent='' gpusub_ckpt_started=0
gpusub_ckpt_say() { printf 'gpusub-ckpt: %s\n' "$*" >&2; }
# The newest complete checkpoint step as STEP<tab>TIME<tab>PATH (nothing when none), read by the job-side
# library: it validates every marker, never follows a symlink and counts only the user's own files.
gpusub_ckpt_newest() {
  local f
  for f in "$GPUSUB_CKPT_DIR"/gpusub-marker.*.json; do
    [ -e "$f" ] || [ -L "$f" ] || return 0
    break
  done
  if [ ! -x "$gpusub_ckpt_python" ]; then
    gpusub_ckpt_say "cannot read the markers: no interpreter $gpusub_ckpt_python on $(hostname -s)"
    return 0
  fi
  "$gpusub_ckpt_python" -s -E -c 'import sys
sys.path.insert(0, sys.argv[1])
from slurm_gpu.checkpoint.job import newest_step
s = newest_step()
if s is not None:
    print(s.step, int(s.time), s.path, sep="\t")' "$gpusub_ckpt_library" </dev/null
}
# Why the stop came: "time-limit" (the job ends within the signal's lead time), "preemption" (Slurm set
# the job's PreemptTime) or "signal" (neither: someone sent it); read from the job's record, not from
# the order in which signals arrive.
gpusub_ckpt_reason() {
  local info='' end now preempt
  [ -z "${SLURM_JOB_ID:-}" ] || info=$(timeout 10 scontrol -o show job "$SLURM_JOB_ID" 2>/dev/null) || info=''
  now=$(date +%s)
  [[ $info =~ (^|[[:space:]])PreemptTime=([^[:space:]]*) ]] && preempt=${BASH_REMATCH[2]} || preempt=None
  [[ $info =~ (^|[[:space:]])EndTime=([^[:space:]]*) ]] && end=$(date -d "${BASH_REMATCH[2]}" +%s 2>/dev/null) || end=''
  if [ -n "$preempt" ] && [ "$preempt" != None ] && [ "$preempt" != Unknown ]; then
    gpusub_ckpt_why=preemption
  elif [ -n "$end" ] && [ $((end - now)) -le $((gpusub_ckpt_lead + 60)) ]; then
    gpusub_ckpt_why=time-limit
  else
    gpusub_ckpt_why=signal
  fi
}
# The stop signal (from Slurm, --signal=B:USR2): pass it on to the payload's process group and to
# every task of the job's running steps (scancel without --batch leaves this shell out), once.
gpusub_ckpt_on_stop() {
  [ -z "$gpusub_ckpt_stop" ] || return 0
  gpusub_ckpt_stop=$(date +%s) gpusub_ckpt_pending=1
  gpusub_ckpt_forward
  [ -z "${SLURM_JOB_ID:-}" ] || timeout 10 scancel --signal="$gpusub_ckpt_signal" "$SLURM_JOB_ID" >/dev/null 2>&1
  gpusub_ckpt_reason
  gpusub_ckpt_say "SIG$gpusub_ckpt_signal (reason: $gpusub_ckpt_why) passed on to the payload; it has $gpusub_ckpt_grace s to save"
}
# Pass a pending stop on to the payload, but not in its first 2 s: before it can have installed its
# handler, the signal would end it (Slurm may send --signal's signal within a second of the start);
# the wait loop passes such a stop on later.
gpusub_ckpt_forward() {
  local now
  printf -v now '%(%s)T' -1
  [ -n "$gpusub_ckpt_pending" ] && [ -n "${gpusub_child:-}" ] && [ $((now - gpusub_ckpt_started)) -ge 2 ] || return 0
  gpusub_ckpt_pending='' gpusub_ckpt_sent=$now
  if [ -n "$gpusub_ckpt_group" ] && [ -r /proc/self/stat ]; then
    gpusub_ckpt_signal_group
  elif [ -n "$gpusub_ckpt_group" ]; then
    kill -s "$gpusub_ckpt_signal" -- "-$gpusub_ckpt_group" 2>/dev/null
  elif [ -n "${gpusub_child:-}" ]; then
    kill -s "$gpusub_ckpt_signal" "$gpusub_child" 2>/dev/null
  fi
}
# Every process of the payload's group but srun: the tasks of a job step get the signal from scancel,
# once, and srun would pass it on a second time or, for HUP or a second INT, end its step.
gpusub_ckpt_signal_group() {
  local f line comm pids=()
  for f in /proc/[0-9]*/stat; do
    read -r line < "$f" 2>/dev/null || continue
    comm=${line#*(} comm=${comm%)*}
    set -- ${line##*) }  # state ppid pgrp ...
    [ "${3:-}" = "$gpusub_ckpt_group" ] && [ "$comm" != srun ] && pids+=("${f:6:-5}")
  done
  [ -z "${pids[*]}" ] || kill -s "$gpusub_ckpt_signal" "${pids[@]}" 2>/dev/null
}
# SIGTERM: Slurm is ending the job (cancelled, killed at the time limit or at a preemption's grace end);
# every process of the job gets it from Slurm too. Pass the stop signal on and requeue nothing.
gpusub_ckpt_on_term() {
  gpusub_ckpt_term=1
  gpusub_ckpt_on_stop
}
# After a stop, once the payload has ended: requeue the job, or say why not.
gpusub_ckpt_decide() {
  local step='' time='' path='' fresh='' f
  if [ -n "$gpusub_ckpt_term" ]; then
    gpusub_ckpt_say "Slurm is ending the job (SIGTERM: cancelled, or killed at its end): gpusub does not requeue it"
    return 0
  fi
  if [ "$gpusub_ckpt_why" = signal ]; then
    gpusub_ckpt_say "not requeued: the stop signal came from neither the time limit nor a preemption"
    return 0
  fi
  if [ -z "${GPUSUB_CKPT_DIR:-}" ]; then
    gpusub_ckpt_say "not requeued after the $gpusub_ckpt_why stop: no checkpoint directory"
    return 0
  fi
  IFS=$'\t' read -r step time path < <(gpusub_ckpt_newest) || :
  if [ -n "$path" ] && [ "${time:-0}" -ge "$gpusub_ckpt_start" ] 2>/dev/null; then
    fresh="step $step, marked in this run ($path)"
  fi
  if [ "$GPUSUB_RESTART_COUNT" -ge "$gpusub_ckpt_max" ]; then
    gpusub_ckpt_say "not requeued after the $gpusub_ckpt_why stop: the job has been restarted $GPUSUB_RESTART_COUNT times, the policy's maximum (max_requeues=$gpusub_ckpt_max)${fresh:+; newest checkpoint: $fresh}"
    return 0
  fi
  if [ "$gpusub_ckpt_why" = time-limit ] && [ -z "$fresh" ]; then
    gpusub_ckpt_say "not requeued at the time limit: no checkpoint was marked since this run started (mark one with gpusub-ckpt mark PATH or slurm_gpu.checkpoint.mark(path, step=N))${path:+; newest checkpoint: step $step}"
    return 0
  fi
  if [ -z "$fresh" ]; then
    fresh="none marked in this run; ${path:+step $step ($path)}${path:-the payload starts over}"
  fi
  gpusub_ckpt_say "requeueing after the $gpusub_ckpt_why stop (restart $((GPUSUB_RESTART_COUNT + 1)) of at most $gpusub_ckpt_max); resume point: $fresh"
  if timeout 30 scontrol requeue "$SLURM_JOB_ID"; then
    for f in 1 2 3 4 5 6 7 8 9 10 11 12; do sleep 5 & wait $!; done  # Slurm ends this run in a moment
  else
    gpusub_ckpt_say "not requeued: scontrol requeue $SLURM_JOB_ID failed (exit $?)"
  fi
}
# The traps before anything slow (a directory on NFS, Python's start): Slurm may send the stop signal
# within a second of the start, and its default action would end this shell.
trap gpusub_ckpt_on_stop USR2
trap gpusub_ckpt_on_term TERM
[ -z "${gpusub_ckpt_early:-}" ] || gpusub_ckpt_on_stop  # the stop came before this trap: held as any early one
unset GPUSUB_CKPT_DIR GPUSUB_RESUME_FROM GPUSUB_RESTART_COUNT
export GPUSUB_CKPT_SIGNAL=USR2 GPUSUB_CKPT_KEEP=3
# This job's directory, under its work directory: made by the job itself, as its user (never by root);
# neither it nor its parent may be a symlink or another user's.
gpusub_ckpt_base=$PWD/.gpusub-ckpt  # the job's work dir (sbatch -D), where slurm-gpu-epilog-ctld looks
case ${SLURM_JOB_ID:-} in
  '' | *[!0-9]*) gpusub_ckpt_say "no Slurm job id: the checkpoint protocol is off" ;;
  *)
    if [ ! -L "$gpusub_ckpt_base" ] && mkdir -p -- "$gpusub_ckpt_base/$SLURM_JOB_ID" 2>/dev/null \
        && [ ! -L "$gpusub_ckpt_base" ] && [ -O "$gpusub_ckpt_base" ] \
        && [ ! -L "$gpusub_ckpt_base/$SLURM_JOB_ID" ] && [ -O "$gpusub_ckpt_base/$SLURM_JOB_ID" ]; then
      export GPUSUB_CKPT_DIR="$gpusub_ckpt_base/$SLURM_JOB_ID"
    else
      gpusub_ckpt_say "$gpusub_ckpt_base/$SLURM_JOB_ID cannot be made, is a symlink or is not yours: the checkpoint protocol is off"
    fi
    ;;
esac
if [ -n "${GPUSUB_CKPT_DIR:-}" ]; then
  # Restarts: Slurm's count, or this job's own record of its starts when that is higher (a release
  # that requeues once more than it preempts, or a count Slurm lost).
  gpusub_ckpt_slurm=${SLURM_RESTART_COUNT:-0}
  case $gpusub_ckpt_slurm in '' | *[!0-9]*) gpusub_ckpt_slurm=0 ;; esac
  gpusub_ckpt_runs=0
  if [ -f "$GPUSUB_CKPT_DIR/gpusub-runs" ] && [ ! -L "$GPUSUB_CKPT_DIR/gpusub-runs" ]; then
    gpusub_ckpt_runs=$(wc -l < "$GPUSUB_CKPT_DIR/gpusub-runs") || gpusub_ckpt_runs=0
  fi
  [ "$gpusub_ckpt_runs" -gt "$gpusub_ckpt_slurm" ] 2>/dev/null && gpusub_ckpt_slurm=$gpusub_ckpt_runs
  export GPUSUB_RESTART_COUNT=$gpusub_ckpt_slurm
  printf '%s %s %s\n' "$SLURM_JOB_ID" "${SLURM_RESTART_COUNT:-0}" "$gpusub_ckpt_start" >> "$GPUSUB_CKPT_DIR/gpusub-runs"
  IFS=$'\t' read -r gpusub_ckpt_step gpusub_ckpt_time gpusub_ckpt_path < <(gpusub_ckpt_newest) || :
  if [ -n "${gpusub_ckpt_path:-}" ]; then
    export GPUSUB_RESUME_FROM="$gpusub_ckpt_path"
    gpusub_ckpt_say "run $((GPUSUB_RESTART_COUNT + 1)): resuming from step $gpusub_ckpt_step ($gpusub_ckpt_path)"
  fi
fi
# slurm-gpu:hook end

# Binding for the srun steps the script starts: srun reads these input variables (an option on the
# srun line still wins; a value already in the job's environment is kept).
[ -n "${SLURM_CPU_BIND+set}" ] || export SLURM_CPU_BIND=cores
# The job's environment as plain sbatch sets it for the user's own options (docs/gpusub.md, "The job's
# environment"): what sbatch derives from the options gpusub typed or added, back to the user's values.
unset SLURM_OPEN_MODE
# bash counts the payload one shell level below this one; under sbatch it is the batch shell itself.
if [ "${SHLVL:-1}" -le 1 ] 2>/dev/null; then unset SHLVL; else export SHLVL=$((SHLVL - 1)); fi
# The job's own script, byte for byte, with its arguments exactly as given to gpusub.
set -- 
gpusub_dir=$(mktemp -d "${TMPDIR:-/tmp}/gpusub.XXXXXXXXXX") || { echo "gpusub: cannot create a private directory under ${TMPDIR:-/tmp}" >&2; exit 1; }
gpusub_payload="$gpusub_dir"/train.sh
cat > "$gpusub_payload" <<'GPUSUB_PAYLOAD_98e234f6'
#!/bin/bash
srun python train.py
GPUSUB_PAYLOAD_98e234f6
chmod 700 "$gpusub_payload"
printf -v gpusub_ckpt_started '%(%s)T' -1
# Run it once, as sbatch would, in a process group of its own (the stop signal goes to all of it), and
# stay its parent: the checkpoint protocol's handlers (above) run here; the job's exit code is the script's.
if command -v setsid >/dev/null 2>&1; then
  (trap - INT QUIT; exec setsid "$gpusub_payload" "$@") <&0 &
  gpusub_child=$! gpusub_ckpt_group=$!
else
  (trap - INT QUIT; exec "$gpusub_payload" "$@") <&0 &
  gpusub_child=$!
fi
gpusub_rc=0 gpusub_ckpt_killed=0
# After a stop, the rest of the payload's process group too: a launcher that the signal ends (torchrun
# forwards only TERM, INT, HUP and QUIT) leaves workers that are still saving.
while kill -0 "$gpusub_child" 2>/dev/null \
    || { [ -n "$gpusub_ckpt_stop" ] && [ -n "$gpusub_ckpt_group" ] && kill -0 -- "-$gpusub_ckpt_group" 2>/dev/null; }; do
  if [ -z "$gpusub_ckpt_stop" ]; then
    wait "$gpusub_child"; gpusub_rc=$?
    continue
  fi
  # After the stop signal: once passed on, the payload has the grace time, then SIGTERM, then SIGKILL 10 s later.
  gpusub_ckpt_forward
  printf -v gpusub_ckpt_now '%(%s)T' -1
  if [ "$gpusub_ckpt_killed" = 0 ] && [ -n "$gpusub_ckpt_sent" ] \
      && [ $((gpusub_ckpt_now - gpusub_ckpt_sent)) -ge "$gpusub_ckpt_grace" ]; then
    gpusub_ckpt_say "the payload did not end within the grace time ($gpusub_ckpt_grace s): SIGTERM"
    gpusub_ckpt_killed=$gpusub_ckpt_now
    kill -s TERM -- "-${gpusub_ckpt_group:-$gpusub_child}" 2>/dev/null || kill -s TERM "$gpusub_child" 2>/dev/null
    [ -z "${SLURM_JOB_ID:-}" ] || timeout 10 scancel --signal=TERM "$SLURM_JOB_ID" >/dev/null 2>&1
  elif [ "$gpusub_ckpt_killed" != 0 ] && [ $((gpusub_ckpt_now - gpusub_ckpt_killed)) -ge 10 ]; then
    kill -s KILL -- "-${gpusub_ckpt_group:-$gpusub_child}" 2>/dev/null || kill -s KILL "$gpusub_child" 2>/dev/null
  fi
  sleep 1 & wait $!
done
# A wait that a trap interrupted returned the trap's status: ask for the payload's own once more.
wait "$gpusub_child" 2>/dev/null; gpusub_ckpt_rc=$?
[ "$gpusub_ckpt_rc" = 127 ] || gpusub_rc=$gpusub_ckpt_rc
rm -rf -- "$gpusub_dir"
[ -z "$gpusub_ckpt_stop" ] || gpusub_ckpt_decide
exit "$gpusub_rc"
