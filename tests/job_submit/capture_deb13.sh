#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run tests/job_submit/capture.py against Slurm 24.11 (Debian 13), on this Debian 12 machine (as root):
# a scratch copy of the Debian 13 base root (/var/tmp/deb13-base, never modified) is run in private
# PID, mount, IPC, UTS and cgroup namespaces (unshare + chroot, the approach of run-ci-debian.sh), with
# the host network (apt and pip need it; the capture lab listens on its own ports, base 19817, and its
# own munge, MariaDB and /dev live in the private /run, /tmp and /dev). The capture's fixtures are copied
# back into this checkout's tests/job_submit/fixtures/<version>/; the scratch root is removed.
#
#   tests/job_submit/capture_deb13.sh [--keep]
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "capture_deb13: must run as root" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/../.." && pwd)
base=/var/tmp/deb13-base
[ -x "$base/usr/bin/python3" ] || { echo "capture_deb13: no Debian 13 base at $base" >&2; exit 2; }
keep=0; [ "${1:-}" = --keep ] && keep=1
ts=$(date +%Y%m%d-%H%M%S)
work=/var/tmp/jsrec-deb13-$ts
root=$work/root
host=jsrec-deb13
cg_children=() CG_MOUNTS=""
nspid=""

cleanup() {
  local rc=$?
  if [ -n "$nspid" ] && kill -0 "$nspid" 2>/dev/null; then kill -TERM "$nspid" 2>/dev/null || true; wait "$nspid" 2>/dev/null || true; fi
  for p in /proc/[0-9]*; do   # the PID namespace ended everything; check that nothing lives in our root
    r=$(readlink "$p/root" 2>/dev/null || true)
    case "$r" in "$work"/*) echo "capture_deb13: killing leftover ${p#/proc/}" >&2; kill -9 "${p#/proc/}" 2>/dev/null || true ;; esac
  done
  for c in "${cg_children[@]}"; do [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null || true; done
  if [ "$keep" = 1 ]; then echo "capture_deb13: kept $work" >&2; else rm -rf --one-file-system "$work"; fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$work"
echo "capture_deb13: copying $base to $root" >&2
cp -a "$base" "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf"
[ -f /etc/pip.conf ] && cp /etc/pip.conf "$root/etc/pip.conf"
echo "$host" >"$root/etc/hostname"
printf '127.0.0.1\tlocalhost %s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$host" >"$root/etc/hosts"
mkdir -p "$root/root/slurm-gpu"
tar -C "$repo" --exclude=./.venv --exclude=./.git --exclude='*/__pycache__' -cf - . | tar -C "$root/root/slurm-gpu" -xf -

# per-run child cgroups in each hierarchy (24.11's slurmd wants cgroups), seen through an own namespace
while read -r dev mnt fstype opts rest; do
  case "$mnt" in /sys/fs/cgroup/*) ;; *) continue ;; esac
  case "$fstype" in
    cgroup2) cur=$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup); o="" ;;
    cgroup)
      o=$(tr , '\n' <<<"$opts" | grep -vxE 'rw|ro|relatime|noatime|nosuid|nodev|noexec|clone_children' | paste -sd,)
      name=$(tr , '\n' <<<"$o" | sed -n 's/^name=//p')
      cur=$(awk -F: -v o="$o" '{ if ($2 == o) print $3 }' /proc/self/cgroup)
      [ -n "$name" ] && o="none,$o" ;;
    *) continue ;;
  esac
  [ -n "$cur" ] || continue
  c=$mnt${cur%/}/jsrec-deb13-$ts
  mkdir "$c" || continue
  if [ -f "$c/cpuset.cpus" ]; then cat "$(dirname "$c")/cpuset.cpus" >"$c/cpuset.cpus"; cat "$(dirname "$c")/cpuset.mems" >"$c/cpuset.mems"; fi
  cg_children+=("$c")
  CG_MOUNTS+="$mnt|$fstype|$o "
done </proc/mounts
export CG_MOUNTS

cat >"$work/ns-init.sh" <<'INIT'
set -eu
root=$1 host=$2
hostname "$host"
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys"
mount -t tmpfs -o mode=755,nosuid,size=64m tmpfs "$root/dev"
for n in "null 1 3" "zero 1 5" "full 1 7" "random 1 8" "urandom 1 9" "tty 5 0"; do
  set -- $n; mknod -m 666 "$root/dev/$1" c "$2" "$3"
done
mkdir -p "$root/dev/pts" "$root/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5 devpts "$root/dev/pts"
ln -s pts/ptmx "$root/dev/ptmx"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/dev/shm"
ln -s /proc/self/fd "$root/dev/fd"
if [ -n "${CG_MOUNTS:-}" ]; then
  mount -t tmpfs -o mode=755,nosuid,nodev,noexec tmpfs "$root/sys/fs/cgroup"
  for m in $CG_MOUNTS; do
    IFS='|' read -r d t o <<<"$m"
    mkdir -p "$root$d"
    mount -t "$t" -o "nosuid,nodev,noexec${o:+,$o}" "$t" "$root$d"
  done
fi
mount -t tmpfs -o mode=755,nosuid,nodev tmpfs "$root/run"
mkdir -m 1777 "$root/run/lock"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/tmp"
exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -c "$CMD" </dev/null
INIT

CMD='set -e; export DEBIAN_FRONTEND=noninteractive
printf "#!/bin/sh\nexit 101\n" >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends python3-click python3-jinja2 python3-psutil python3-yaml python3-hostlist >/dev/null
cd /root/slurm-gpu
chmod 755 /root
PYTHONPATH=/root/slurm-gpu python3 tests/job_submit/capture.py --port-base 19817 --out /root/fixtures'
set +e
(
  for c in "${cg_children[@]}"; do echo "$BASHPID" >"$c/cgroup.procs"; done
  CMD=$CMD exec timeout -k 30 1500 unshare --fork --kill-child --pid --mount --propagation private --ipc --uts \
    --cgroup --mount-proc /bin/bash "$work/ns-init.sh" "$root" "$host"
) & nspid=$!
wait "$nspid"; rc=$?
nspid=""
set -e
for d in "$root"/root/fixtures/*/; do
  [ -d "$d" ] || continue
  v=$(basename "$d"); mkdir -p "$repo/tests/job_submit/fixtures/$v"
  cp "$d"cases.jsonl "$repo/tests/job_submit/fixtures/$v/cases.jsonl"
  echo "capture_deb13: fixtures for Slurm $v -> tests/job_submit/fixtures/$v/" >&2
done
exit $rc
