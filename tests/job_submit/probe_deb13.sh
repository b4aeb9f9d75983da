#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run tests/job_submit/probe.py against Slurm 24.11 (Debian 13), on this Debian 12 machine (as root). It reuses
# tests/job_submit/capture_deb13.sh (scratch copy of /var/tmp/deb13-base, private PID/mount/IPC/UTS/cgroup
# namespaces, host network) with probe.py in place of capture.py, ports from 21817, and its own scratch and
# cgroup names; the probe's JSON lines come out on stdout. The fixtures are not touched.
#
#   sudo tests/job_submit/probe_deb13.sh >/tmp/probe-24.11.jsonl
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
src=$(sed -e 's#tests/job_submit/capture.py --port-base 19817 --out /root/fixtures#tests/job_submit/probe.py --port-base 21817 --out -#' \
          -e 's#jsrec-deb13#jsprobe-deb13#g' -e "s#^repo=.*#repo=$repo#" "$here/capture_deb13.sh")
grep -q 'probe.py --port-base 21817 --out -' <<<"$src" || { echo "probe_deb13: capture_deb13.sh changed, cannot reuse it" >&2; exit 2; }
exec bash -c "$src" probe_deb13 "$@"
