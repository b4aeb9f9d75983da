#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# EpilogSlurmctld= shim for the checkpoint protocol's controller-side hook (docs/checkpointing.md,
# "The controller-side hook"). slurmctld runs it as SlurmUser with only SLURM_JOB_* variables: no PATH,
# no SLURM_CONF, no arguments. Settings, when the defaults do not fit (export them here, or in the
# environment of a wrapper that execs this file):
#   SLURM_GPU_EPILOG_CTLD       the entry point (default: slurm-gpu-epilog-ctld on the default PATH)
#   GPUSUB_POLICY               the site policy (default: /etc/slurm-gpu/policy.yaml)
#   SLURM_GPU_EPILOG_CTLD_LOG   the log file (default: /var/log/slurm-gpu/epilog-ctld.log)
#   SLURM_CONF                  only where the clients do not find slurm.conf themselves
# The hook always exits 0; so does this shim when the entry point cannot be started.
PATH=${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}
export PATH
cmd=${SLURM_GPU_EPILOG_CTLD:-slurm-gpu-epilog-ctld}
if ! command -v ${cmd%% *} >/dev/null 2>&1; then
  echo "epilog_ctld.sh: ${cmd%% *} not found (PATH=$PATH); job ${SLURM_JOB_ID:-?} left alone" >&2
  exit 0
fi
# No exec: whatever becomes of the entry point (a broken interpreter, a kill, a hang on a stuck file
# system that only SIGKILL ends), slurmctld sees 0 and within a bounded time.
set -f
if command -v timeout >/dev/null 2>&1; then
  timeout -k 5 -s KILL 120 $cmd "$@" </dev/null || echo "epilog_ctld.sh: $cmd ended with $? for job ${SLURM_JOB_ID:-?}" >&2
else
  $cmd "$@" </dev/null || echo "epilog_ctld.sh: $cmd ended with $? for job ${SLURM_JOB_ID:-?}" >&2
fi
exit 0
