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
# MIG (read-only; docs/mig_mps.md "What to capture on a real node"): profiles and their placements, the
# instances with the driver's GPU-instance ids, MIG device UUIDs, the capability minors Slurm reads
run nvidia-smi-L.txt nvidia-smi -L
run mig-lgip.txt nvidia-smi mig -lgip
run mig-lgipp.txt nvidia-smi mig -lgipp
run mig-lgi.txt nvidia-smi mig -lgi
run mig-lci.txt nvidia-smi mig -lci
run mig-minors.txt cat /proc/driver/nvidia-caps/mig-minors
run nvidia-caps.txt ls -l /dev/nvidia-caps
run nvml-mig.json python3 - <<'PY'
import json
import pynvml as N  # nvidia-ml-py; read-only calls only
N.nvmlInit()
out = {"driver": N.nvmlSystemGetDriverVersion(), "gpus": []}
for i in range(N.nvmlDeviceGetCount()):
    h = N.nvmlDeviceGetHandleByIndex(i)
    g = {"index": i, "name": N.nvmlDeviceGetName(h), "uuid": N.nvmlDeviceGetUUID(h),
         "minor": N.nvmlDeviceGetMinorNumber(h), "bus_id": N.nvmlDeviceGetPciInfo(h).busId, "mig": []}
    try:
        g["mig_mode"] = N.nvmlDeviceGetMigMode(h)
        for j in range(N.nvmlDeviceGetMaxMigDeviceCount(h)):
            try:
                m = N.nvmlDeviceGetMigDeviceHandleByIndex(h, j)
            except N.NVMLError:
                break
            a = N.nvmlDeviceGetAttributes(m)
            g["mig"].append({"index": j, "name": N.nvmlDeviceGetName(m), "uuid": N.nvmlDeviceGetUUID(m),
                             "gi": N.nvmlDeviceGetGpuInstanceId(m), "ci": N.nvmlDeviceGetComputeInstanceId(m),
                             "gi_slices": a.gpuInstanceSliceCount, "ci_slices": a.computeInstanceSliceCount,
                             "memory_mb": a.memorySizeMB})
    except N.NVMLError as e:
        g["mig_error"] = str(e)
    links = []
    for lane in range(18):
        try:
            links.append(N.nvmlDeviceGetNvLinkRemotePciInfo(h, lane).busId
                         if N.nvmlDeviceGetNvLinkState(h, lane) else None)
        except N.NVMLError:
            break
    g["nvlinks"] = links
    out["gpus"].append(g)
print(json.dumps(out, indent=1, default=str))
PY
# what Slurm's own AutoDetect=nvml makes of this node (prints the GRES records and exits; needs gpu_nvml.so)
command -v slurmd >/dev/null && run slurmd-G.txt slurmd -G
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
