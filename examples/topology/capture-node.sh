#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Read-only capture of a GPU node's topology for slurm-gpu, plus a cross-check of the --live parser
# against the `nvidia-smi topo -m` parser. Usage: bash capture-node.sh [OUTDIR]
# (SLURM_GPU="python3 -m slurm_gpu.cli.main" to run from a checkout.)
set -u
O=${1:-./topo-capture-$(hostname)-$(date +%Y%m%d%H%M)}
mkdir -p "$O"
SG=${SLURM_GPU:-slurm-gpu}
run() { local f=$1; shift; echo "+ $*" >>"$O/log"; "$@" >"$O/$f" 2>>"$O/log"; echo "$f rc=$?" >>"$O/log"; }
run nvidia-smi-topo-m.txt nvidia-smi topo -m
run nvidia-smi-q.xml nvidia-smi -q -x
run lscpu-p.txt lscpu -p
run lscpu.txt lscpu
command -v numactl >/dev/null && run numactl-H.txt numactl -H
command -v lstopo-no-graphics >/dev/null && run lstopo.xml lstopo-no-graphics --of xml
run sysfs.txt sh -c 'for d in /sys/bus/pci/devices/*; do [ "$(cat $d/vendor)" = 0x10de ] &&
  echo "$d class=$(cat $d/class) numa=$(cat $d/numa_node) cpus=$(cat $d/local_cpulist)"; done;
  grep . /sys/devices/system/node/node*/cpulist'
run live.json $SG topo show --live --json
run live-full.json $SG topo show --live --json --full
run live-show.txt $SG topo show --live
run live-gres.txt $SG topo gres-conf --live --type gpu --links
run smi.json $SG topo show --json --from-nvidia-smi "$O/nvidia-smi-topo-m.txt" --lscpu "$O/lscpu-p.txt"
# without lscpu: sockets derived from the disjoint GPU affinity sets (the assumption goes to the log)
run smi-no-lscpu.json $SG topo show --json --from-nvidia-smi "$O/nvidia-smi-topo-m.txt"
command -v slurmd >/dev/null && run slurmd-C.txt slurmd -C
python3 - "$O" <<'EOF' | tee "$O/compare.txt"
import json, sys
o = sys.argv[1]
try:
    live, smi = (json.load(open(f"{o}/{n}")) for n in ("live.json", "smi.json"))
except Exception as e:
    sys.exit(f"compare skipped: {e}")
try:
    guessed = json.load(open(f"{o}/smi-no-lscpu.json"))["sockets"]
    print(f"sockets: lscpu {smi['sockets']}, derived from topo -m alone {guessed}",
          "SAME" if guessed == smi["sockets"] else "DIFFERENT (expected on NPS2/NPS4, SNC)")
except Exception as e:
    print(f"socket derivation check skipped: {e}")
for a, b in zip(live["gpus"], smi["gpus"]):
    same = (a["numa_node"], a["cpus"], a["links"]) == (b["numa_node"], b["cpus"], b["links"])
    print(f"GPU{a['index']} live {a['numa_node']} {a['cpus']} topo-m {b['numa_node']} {b['cpus']}",
          "SAME" if same else "DIFFERENT")
EOF
cat "$O/log"
echo "captures in $O"
