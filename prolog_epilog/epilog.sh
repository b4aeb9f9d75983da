#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Epilog= shim for slurm-gpu's node hooks (docs/hooks.md). slurmd runs it as root after the job on each node.
# Slurm gives it no PATH and no arguments. Settings, when the defaults do not fit (export them here, or
# in the environment of a wrapper that execs this file):
#   SLURM_GPU_EPILOG   the entry point (default: slurm-gpu-epilog on the default PATH)
#   SLURM_GPU_HOOKS_CONF   the config file (default: /etc/slurm-gpu/hooks.conf)
PATH=${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}
export PATH
cmd=${SLURM_GPU_EPILOG:-slurm-gpu-epilog}
if ! command -v ${cmd%% *} >/dev/null 2>&1; then
  echo "epilog.sh: ${cmd%% *} not found (PATH=$PATH); job ${SLURM_JOB_ID:-?} left alone" >&2
  exit 0
fi
# No exec: whatever becomes of the entry point (a broken interpreter, a kill, a hang in the driver that
# only SIGKILL ends), slurmd sees its status within a bounded time. Status 3 (a real GPU health failure:
# the node is drained) is passed on as 1; anything else is 0, so our own faults never drain a node.
set -f
if command -v timeout >/dev/null 2>&1; then
  timeout -k 5 -s KILL 120 $cmd "$@" </dev/null
else
  $cmd "$@" </dev/null
fi
rc=$?
if [ "$rc" = 3 ]; then exit 1; fi
[ "$rc" = 0 ] || echo "epilog.sh: $cmd ended with $rc for job ${SLURM_JOB_ID:-?}; ignored" >&2
exit 0
