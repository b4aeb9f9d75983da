# SPDX-License-Identifier: Apache-2.0
"""Benchmark P6: `slurm-gpu cluster --json`'s computation over a recorded 2,000-node, 16,000-GPU cluster.

The records are the lab's real Slurm 22.05.8 output (tests/cluster/data/lab-22.05: `scontrol show node
-d -o`, `squeue --json -t all` (the one job reader's input, docs/records.md), `scontrol show partition
-o`), scaled up by renaming: 2,000 copies of the h100n1 line (gpu0001..gpu2000, 8 x h100 each) with
GresUsed/CPUAlloc/AllocMem/State set for a deterministic mix of 0-8 GPUs in use (every 50th node drained,
every 97th powered down), and one job per running job (copies of the capture's running `--gpus=h100:3` job,
renamed, with its own GPU indices and cores) plus 2,000 pending jobs (copies of its pending job), written
to files in a temporary directory.

Measured, alternating for N rounds (default 15), median:
- cluster: read the three files, parse them (slurm_gpu.slurm.records: the nodes' text, squeue's JSON),
  compute the summary (slurm_gpu.cluster.model) and json.dumps it: what `slurm-gpu cluster --json
  --records DIR` does after start-up;
- floor: read one file holding the same records as JSON (the nodes and partitions as a list of
  {key: value} objects, exactly the key/value pairs scontrol printed; the jobs as squeue printed them)
  and json.loads it.
Prints both, their ratio (goal <= 3.0) and the peak memory of one cluster run (tracemalloc) and of one
floor run. Exit 1 when the ratio is above --goal.

    .venv/bin/python benchmarks/bench_cluster.py [--rounds N] [--nodes 2000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import statistics
import sys
import tempfile
import time
import tracemalloc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
LAB = os.path.join(ROOT, "tests", "cluster", "data", "lab-22.05")

from slurm_gpu.cluster.view import from_texts  # noqa: E402
from slurm_gpu.slurm.records import parse_kv_line  # noqa: E402


def _sub(line: str, **fields: str) -> str:
    for key, value in fields.items():
        line, n = re.subn(rf"(^| ){re.escape(key)}=\S*", lambda m, k=key, v=value: f"{m.group(1)}{k}={v}", line)
        if n != 1:
            raise SystemExit(f"bench: the recorded line has no single {key}=")
    return line


def generate(directory: str, n_nodes: int) -> dict[str, int]:
    with open(os.path.join(LAB, "nodes.txt"), encoding="utf-8") as fh:
        node_tpl = [ln for ln in fh.read().splitlines() if ln.startswith("NodeName=h100n1 ")][0]
    with open(os.path.join(LAB, "jobs.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    job_tpl = next(j for j in doc["jobs"] if j["job_state"] == "RUNNING" and j["tres_per_job"] == "gres:gpu:h100:3")
    pend_tpl = next(j for j in doc["jobs"] if j["job_state"] == "PENDING")
    nodes, job_lines = [], []
    job_id = 10_000
    for i in range(1, n_nodes + 1):
        name = f"gpu{i:04d}"
        used = (i * 5) % 9
        state = "ALLOCATED" if used == 8 else ("MIXED" if used else "IDLE")
        if i % 50 == 0:
            state, used = "IDLE+DRAIN", 0
        elif i % 97 == 0:
            state, used = "IDLE+POWERED_DOWN", 0
        gres_used = f"gpu:h100:{used}(IDX:0-{used - 1})" if used else "gpu:h100:0(IDX:N/A)"
        tres = f"cpu={4 * used},mem={60 * used}G,gres/gpu={used},gres/gpu:h100={used}" if used else ""
        nodes.append(_sub(node_tpl, NodeName=name, State=state, GresUsed=gres_used, CPUAlloc=str(4 * used),
                          AllocMem=str(61440 * used), AllocTRES=tres))
        start = 0
        while start < used:  # jobs of 1, 2 or 4 GPUs fill the used ones
            size = min(used - start, (1, 2, 4)[(i + start) % 3])
            idx = f"{start}-{start + size - 1}" if size > 1 else str(start)
            job = copy.deepcopy(job_tpl)
            cores = {str(c): "allocated" for c in range(4 * start, 4 * (start + size))}
            job.update(job_id=job_id, nodes=name, batch_host=name, required_nodes=name, cpus=4 * size,
                       tres_per_job=f"gres:gpu:h100:{size}", gres_detail=[f"gpu:h100:{size}(IDX:{idx})"])
            job["job_resources"].update(nodes=name, allocated_cores=4 * size)
            job["job_resources"]["allocated_nodes"] = [dict(job["job_resources"]["allocated_nodes"][0],
                                                            nodename=name, sockets={"0": {"cores": cores}})]
            job_lines.append(job)
            job_id += 1
            start += size
    for k in range(n_nodes):
        size = (1, 2, 4, 8)[k % 4]
        job_lines.append(dict(copy.deepcopy(pend_tpl), job_id=job_id, tres_per_job=f"gres:gpu:h100:{size}"))
        job_id += 1
    texts = {"nodes.txt": "\n".join(nodes) + "\n",
             "jobs.json": json.dumps({"meta": doc["meta"], "errors": [], "jobs": job_lines}, indent=2)}
    with open(os.path.join(LAB, "partitions.txt"), encoding="utf-8") as fh:
        texts["partitions.txt"] = _sub(fh.read().splitlines()[1], Nodes=f"gpu[0001-{n_nodes:04d}]") + "\n"
    for name, text in texts.items():
        with open(os.path.join(directory, name), "w", encoding="utf-8") as fh:
            fh.write(text)
    records = {name: [parse_kv_line(ln) for ln in texts[name].splitlines() if ln]
               for name in ("nodes.txt", "partitions.txt")}
    records["jobs"] = job_lines
    with open(os.path.join(directory, "records.json"), "w", encoding="utf-8") as fh:
        json.dump(records, fh)
    return {"nodes": len(nodes), "gpus": 8 * len(nodes), "jobs": len(job_lines),
            "text_bytes": sum(len(t) for t in texts.values()),
            "json_bytes": os.path.getsize(os.path.join(directory, "records.json"))}


def run_cluster(directory: str) -> str:
    texts = []
    for name in ("nodes.txt", "jobs.json", "partitions.txt"):
        with open(os.path.join(directory, name), encoding="utf-8") as fh:
            texts.append(fh.read())
    return json.dumps(from_texts(*texts).summary, indent=1)


def run_floor(directory: str) -> object:
    with open(os.path.join(directory, "records.json"), encoding="utf-8") as fh:
        return json.loads(fh.read())


def peak(fn, *args) -> int:
    tracemalloc.start()
    fn(*args)
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--goal", type=float, default=3.0)
    ap.add_argument("--keep", default=None, help="write the records into DIR and keep them")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cluster.") as tmp:
        directory = args.keep or tmp
        os.makedirs(directory, exist_ok=True)
        size = generate(directory, args.nodes)
        doc = json.loads(run_cluster(directory))
        h = doc["types"]["h100"]
        if h["total"] != size["gpus"]:
            print(f"bench: FAIL: the summary counts {h['total']} GPUs, the records hold {size['gpus']}",
                  file=sys.stderr)
            return 1
        cluster_t, floor_t = [], []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            run_cluster(directory)
            t1 = time.perf_counter()
            run_floor(directory)
            t2 = time.perf_counter()
            cluster_t.append(t1 - t0)
            floor_t.append(t2 - t1)
        c, f = statistics.median(cluster_t), statistics.median(floor_t)
        pc, pf = peak(run_cluster, directory), peak(run_floor, directory)
    print(f"records: {size['nodes']} nodes, {size['gpus']} GPUs, {size['jobs']} jobs; "
          f"files (node text, squeue's JSON) {size['text_bytes'] / 1e6:.1f} MB, "
          f"the same records as JSON {size['json_bytes'] / 1e6:.1f} MB")
    print(f"summary: h100 total {h['total']} allocated {h['allocated']} free {h['free']} unavailable "
          f"{h['unavailable']} largest one node {h['largest_startable']['one_node']}")
    print(f"cluster --json computation: median {c * 1e3:.1f} ms; floor json.loads of the same records: "
          f"median {f * 1e3:.1f} ms ({args.rounds} alternating rounds)")
    print(f"ratio {c / f:.2f} (goal <= {args.goal}); peak memory (tracemalloc): cluster {pc / 2**20:.1f} MiB, "
          f"floor {pf / 2**20:.1f} MiB")
    return 0 if c / f <= args.goal else 1


if __name__ == "__main__":
    sys.exit(main())
