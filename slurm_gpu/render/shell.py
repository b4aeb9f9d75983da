# SPDX-License-Identifier: Apache-2.0
"""The batch script's text: gpusub's bash, written out from the typed parts ``render.script`` prepares.

Plain Python, no template engine (as submitit writes its sbatch scripts): the fixed shell is kept here as
text, the parts that vary are written by the functions below, and the few values inside a fixed block
are ``@NAME@`` placeholders filled in one pass (``fill``: every placeholder must be given, and nothing
filled in is read again). Every value from the user or the policy reaches the text through ``shquote``
(bash), ``directive_quote`` (sbatch's ``#SBATCH`` lexer, in render.script) or ``comment_text`` (one
printable line in a comment). Until issue 23 this was four Jinja2 templates in ``templates/``; the
golden files they rendered are still the judge (tests/render/test_golden.py), byte for byte.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

from slurm_gpu.plain import NamedTuple
from slurm_gpu.render.checkpoint import CheckpointSettings
from slurm_gpu.render.job_env import EnvStep, TresPerTask

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # control characters but tab and newline
_PLACEHOLDER = re.compile(r"@([A-Z][A-Z0-9_]*)@")


def shquote(value: object) -> str:
    """Quote for bash. Text with control characters (other than tab and newline) is written ``$'...'``
    with escapes, so that the rendered script never holds a raw ``\r`` (before a newline sbatch refuses it
    as a "DOS line break") or another control byte; everything else is ``shlex.quote``'s single quotes."""
    text = str(value)
    if not _CONTROL.search(text):
        return shlex.quote(text)
    body = text.replace("\\", "\\\\").replace("'", "\\'")
    body = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", body)
    return f"$'{body}'"


def comment_text(value: object) -> str:
    """Make text safe for a bash comment: one line, printable characters only."""
    return "".join(ch if ch.isprintable() else "?" for ch in str(value))


def fill(block: str, values: Mapping[str, object]) -> str:
    """``block`` with each ``@NAME@`` replaced by ``values[NAME]`` (as text; quote it first), in one pass.
    A line that is only a placeholder whose value is "" is dropped. Every placeholder must have a value
    and every value a placeholder (a misspelt one is a bug here, not a blank in a job's script)."""
    used = set(_PLACEHOLDER.findall(block))
    if used != set(values):
        raise ValueError(f"placeholders {sorted(used)} but values for {sorted(values)}")
    lines = [line for line in block.split("\n")
             if not (_PLACEHOLDER.fullmatch(line) and str(values[line[1:-1]]) == "")]
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), "\n".join(lines))


class ScriptParts(NamedTuple):
    """Everything the batch script is written from, already checked by render.script.render_script
    (directives quoted for sbatch; names checked as shell names; the rest is quoted here)."""

    gpusub_version: str
    slurm_version: str  # comment text
    decision: Mapping[str, str]  # job_class, partition, qos, gres -> comment text
    isolation: str  # comment text
    directives: Sequence[str]  # "#SBATCH " + each
    env: Sequence[tuple[str, str]]  # the binding plan's exports
    srun_exports: Sequence[tuple[str, str]]  # srun input variables, set unless the job has them
    srun_unexported: Sequence[str]  # comment text: srun options with no input variable
    restore: Sequence[EnvStep]
    tres_per_task: Sequence[TresPerTask]
    launch: str  # "batch" or "per-gpu" (render_script checks it): anything but "batch" is the srun launch
    srun_options: Sequence[str]
    shim_text: str  # the per-task shim ("" for none)
    payload_name: str
    payload_text: str  # ends with a newline
    payload_base64: str  # "" unless the payload ends in a carriage return
    strip_last_newline: bool
    delimiter: str
    forward_signals: Sequence[str]
    ckpt: CheckpointSettings | None  # the protocol's settings, lead_s the job's own --signal lead
    args: Sequence[str]


CHECKPOINT = r'''# Checkpoint protocol (@WHY@; docs/checkpointing.md). The payload gets GPUSUB_CKPT_DIR (this
# job's directory, the same on every run), GPUSUB_RESTART_COUNT and GPUSUB_RESUME_FROM. On the stop
# signal (the time limit near, or a preemption) every process of the payload and every task of the
# job's running steps gets SIG@SIGNAL@ and has @GRACE@ s to save and mark; then the job requeues itself
# when the time limit stopped it after a fresh checkpoint, or a preemption did, while it has been
# restarted fewer than @MAX_REQUEUES@ times. The reason goes to stderr either way.
gpusub_ckpt_signal=@SIGNAL@ gpusub_ckpt_grace=@GRACE@ gpusub_ckpt_lead=@LEAD@ gpusub_ckpt_max=@MAX_REQUEUES@
gpusub_ckpt_python=@PYTHON@
gpusub_ckpt_library=@LIBRARY@
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
# The stop signal (from Slurm, --signal=B:@SIGNAL@): pass it on to the payload's process group and to
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
trap gpusub_ckpt_on_stop @SIGNAL@
@TERM_TRAP@
[ -z "${gpusub_ckpt_early:-}" ] || gpusub_ckpt_on_stop  # the stop came before this trap: held as any early one
unset GPUSUB_CKPT_DIR GPUSUB_RESUME_FROM GPUSUB_RESTART_COUNT
export GPUSUB_CKPT_SIGNAL=@SIGNAL@ GPUSUB_CKPT_KEEP=@KEEP@
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
'''

# After the stop signal: the wait loop of a job under the checkpoint protocol (batch or per-GPU launch).
CHECKPOINT_WAIT = r'''gpusub_rc=0 gpusub_ckpt_killed=0
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
'''

# The batch launch under the protocol: the payload in a process group of its own.
CHECKPOINT_BATCH_RUN = r'''# Run it once, as sbatch would, in a process group of its own (the stop signal goes to all of it), and
# stay its parent: the checkpoint protocol's handlers (above) run here; the job's exit code is the script's.
if command -v setsid >/dev/null 2>&1; then
  (trap - INT QUIT; exec setsid "$gpusub_payload" "$@") <&0 &
  gpusub_child=$! gpusub_ckpt_group=$!
else
  (trap - INT QUIT; exec "$gpusub_payload" "$@") <&0 &
  gpusub_child=$!
fi
'''

# The batch launch without the protocol, after the traps that pass --signal=B:... on.
BATCH_WAIT = r'''trap ':' TERM
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
'''

# One --tres-per-task variable as sbatch would set it for the user's own GPU request (render.job_env).
TRES_PER_TASK = r'''if [ -n "${@NAME@+set}" ]; then
  gpusub_tres='' gpusub_item=''
  IFS=, read -r -a gpusub_items <<< "$@NAME@"
  for gpusub_item in "${gpusub_items[@]}"; do
    case $gpusub_item in gres/gpu | gres/gpu[:=]*) gpusub_item=@ITEM@ ;; esac
    [ -z "$gpusub_item" ] || gpusub_tres=${gpusub_tres:+$gpusub_tres,}$gpusub_item
  done
  if [ -n "$gpusub_tres" ]; then export @NAME@="$gpusub_tres"; else unset @NAME@; fi
  unset gpusub_tres gpusub_item gpusub_items
fi
'''


def _words(values: Sequence[str]) -> str:
    return " ".join(shquote(v) for v in values)


def _header(p: ScriptParts) -> list[str]:
    d = p.decision
    out = ["#!/bin/bash\n",
           f"# Rendered by gpusub {p.gpusub_version} for Slurm {p.slurm_version}; the job's own script runs\n",
           "# unchanged as the payload at the end.\n",
           f"# Decision: class={d['job_class']} partition={d['partition']} qos={d['qos']} gres={d['gres']} "
           f"isolation={p.isolation}\n"]
    out += [f"#SBATCH {directive}\n" for directive in p.directives]
    if p.ckpt is not None:
        out.append(f"trap 'gpusub_ckpt_early=1' {p.ckpt.signal}  # a stop before the protocol's own trap is "
                   "held, not fatal\n")
    out.append("\n")
    if p.env:
        out.append("# Environment from the binding plan.\n")
        out += [f"export {name}={shquote(value)}\n" for name, value in p.env]
        out.append("\n")
    return out


def _checkpoint_hook(ckpt: CheckpointSettings | None) -> list[str]:
    out = ["# slurm-gpu:hook checkpoint\n"]
    if ckpt is None:
        out.append("# (signal and requeue handling goes here)\n")
    else:
        out.append(fill(CHECKPOINT, {
            "WHY": comment_text(ckpt.why), "SIGNAL": ckpt.signal, "GRACE": ckpt.grace_s, "LEAD": ckpt.lead_s,
            "MAX_REQUEUES": ckpt.max_requeues, "KEEP": ckpt.keep, "PYTHON": shquote(ckpt.python),
            "LIBRARY": shquote(ckpt.library),
            "TERM_TRAP": "" if ckpt.signal == "TERM" else "trap gpusub_ckpt_on_term TERM"}))
    out.append("# slurm-gpu:hook end\n\n")
    return out


def _batch_environment(p: ScriptParts) -> list[str]:
    """The batch launch's variables: srun's inputs for the script's own steps, and the job's environment
    put back to what plain sbatch sets for the user's options."""
    out = []
    if p.srun_exports:
        out += ["# Binding for the srun steps the script starts: srun reads these input variables (an option "
                "on the\n",
                "# srun line still wins; a value already in the job's environment is kept).\n"]
        out += [f'[ -n "${{{name}+set}}" ] || export {name}={shquote(value)}\n' for name, value in p.srun_exports]
    out += [f"# srun option with no input variable (add it to your srun lines): {text}\n"
            for text in p.srun_unexported]
    if p.restore or p.tres_per_task:
        out += ["# The job's environment as plain sbatch sets it for the user's own options (docs/gpusub.md, "
                "\"The job's\n",
                "# environment\"): what sbatch derives from the options gpusub typed or added, back to the "
                "user's values.\n"]
        for step in p.restore:
            if step.value is None:
                out.append(f"unset {step.name}\n")
            elif step.if_set:
                out.append(f'[ -z "${{{step.name}+set}}" ] || export {step.name}={shquote(step.value)}\n')
            else:
                out.append(f"export {step.name}={shquote(step.value)}\n")
        out += [fill(TRES_PER_TASK, {"NAME": t.name, "ITEM": shquote(t.item)}) for t in p.tres_per_task]
    out += ["# bash counts the payload one shell level below this one; under sbatch it is the batch shell "
            "itself.\n",
            'if [ "${SHLVL:-1}" -le 1 ] 2>/dev/null; then unset SHLVL; else export SHLVL=$((SHLVL - 1)); fi\n']
    return out


def _payload(p: ScriptParts) -> list[str]:
    out = ["# The job's own script, byte for byte, with its arguments exactly as given to gpusub.\n",
           f"set -- {_words(p.args)}\n",
           'gpusub_dir=$(mktemp -d "${TMPDIR:-/tmp}/gpusub.XXXXXXXXXX") || { echo "gpusub: cannot create a '
           'private directory under ${TMPDIR:-/tmp}" >&2; exit 1; }\n',
           f'gpusub_payload="$gpusub_dir"/{shquote(p.payload_name)}\n']
    if p.payload_base64:
        out += ["# (base64: the script ends in a carriage return, which a here-document would turn into a DOS "
                "line break)\n",
                f"base64 -d > \"$gpusub_payload\" <<'{p.delimiter}'\n", f"{p.payload_base64}\n", f"{p.delimiter}\n"]
    else:
        out += [f"cat > \"$gpusub_payload\" <<'{p.delimiter}'\n", f"{p.payload_text}{p.delimiter}\n"]
        if p.strip_last_newline:
            out.append('truncate -s -1 "$gpusub_payload"\n')
    out.append('chmod 700 "$gpusub_payload"\n')
    return out


def _srun_launch(p: ScriptParts, background: str) -> list[str]:
    """The per-GPU launch: one srun, each task through the shim when there is one."""
    srun = f"srun {_words(p.srun_options)}"
    if not p.shim_text:
        return [f'{srun} "$gpusub_payload" "$@"{background}\n']
    return ["# Per-task shim: rank variables and the GPU order (entry LOCAL_RANK of CUDA_VISIBLE_DEVICES is\n",
            "# the task's own GPU), then the payload, once per task (gpusub --launch=per-gpu).\n",
            f"SLURM_GPU_SHIM={shquote(p.shim_text)}\n",
            f'{srun} bash -c "$SLURM_GPU_SHIM" slurm-gpu-shim "$gpusub_payload" "$@"{background}\n']


def _launch(p: ScriptParts) -> list[str]:
    batch = p.launch == "batch"
    out = _batch_environment(p) if batch else []
    out += _payload(p)
    if p.ckpt is not None:
        out.append("printf -v gpusub_ckpt_started '%(%s)T' -1\n")
        out += [CHECKPOINT_BATCH_RUN] if batch else [*_srun_launch(p, " <&0 &"), "gpusub_child=$!\n"]
        out.append(CHECKPOINT_WAIT)
    elif batch:
        out += ["# Run it once, as sbatch would, and stay its parent: signals Slurm sends to the batch shell "
                "alone\n",
                "# (--signal=B:...) are passed on to it; the job's exit code is the script's.\n"]
        out += [f"trap 'kill -{sig} \"$gpusub_child\" 2>/dev/null' {sig}\n" for sig in p.forward_signals]
        out.append(BATCH_WAIT)
    else:
        out += [*_srun_launch(p, ""), 'gpusub_rc=$?\n', 'rm -rf -- "$gpusub_dir"\n', 'exit "$gpusub_rc"\n']
    return out


def batch_script(p: ScriptParts) -> str:
    """The whole batch script."""
    return "".join([*_header(p), *_checkpoint_hook(p.ckpt), *_launch(p)])


__all__ = ["ScriptParts", "batch_script", "shquote", "comment_text", "fill"]
