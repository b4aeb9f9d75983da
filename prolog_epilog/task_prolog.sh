#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# TaskProlog= shim for slurm-gpu's node hooks (docs/hooks.md). slurmstepd runs it as the job's user before each task; lines it prints (export/unset/print) reach the task.
# Slurm gives it no PATH and no arguments. Settings, when the defaults do not fit (export them here, or
# in the environment of a wrapper that execs this file):
#   SLURM_GPU_TASK_PROLOG   the entry point (default: slurm-gpu-task-prolog on the default PATH)
#   SLURM_GPU_HOOKS_CONF   the config file (default: /etc/slurm-gpu/hooks.conf)
PATH=${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}
export PATH
cmd=${SLURM_GPU_TASK_PROLOG:-slurm-gpu-task-prolog}
if ! command -v ${cmd%% *} >/dev/null 2>&1; then
  echo "task_prolog.sh: ${cmd%% *} not found (PATH=$PATH); job ${SLURM_JOB_ID:-?} left alone" >&2
  exit 0
fi
# Its output is what the task gets, so it is passed through; a failed set-up left by the prolog
# (status 3) makes it exit 1 (a failed task); anything of its own makes it exit 0.
set -f
if command -v timeout >/dev/null 2>&1; then
  timeout -k 2 -s KILL 20 $cmd "$@" </dev/null
else
  $cmd "$@" </dev/null
fi
rc=$?
[ "$rc" = 3 ] && exit 1
exit 0
