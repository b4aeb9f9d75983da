# SPDX-License-Identifier: Apache-2.0
"""Benchmark P8: multi-node jobs kept under one leaf switch, gpusub vs plain sbatch, in the fabric lab.

The lab: examples/policies/fabric-lab.yaml (4 a100 nodes, 2 leaf switches of 2, topology/tree on 22.05;
class ``multinode`` asks for ``--switches=1@1:00``). The stream: a fixed (seeded) mix of 1-node jobs (1-4
GPUs) and 2-node jobs (4 GPUs per node), arriving every few seconds, each sleeping 15-45 s. It runs once
through plain Slurm (the lab's job_submit.lua passes every job through meanwhile: Slurm without the
policy, the reference) with plain ``sbatch``, and once with ``gpusub``, the same options. Per way:
the share of 2-node jobs whose nodes share one leaf switch (``scontrol show topology``), and the median
wait (start - submit) of the 2-node jobs; printed: both, and the median wait gpusub adds.

Usage (as root, the fabric lab up on this Slurm):
    export SLURM_GPU_LAB_DIR=/tmp/lab-fabric SLURM_GPU_LAB_PORT_BASE=32000
    .venv/bin/slurm-gpu lab up --policy examples/policies/fabric-lab.yaml
    .venv/bin/python benchmarks/bench_topology.py [--jobs 14] [--seed 8]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from datetime import datetime

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from slurm_gpu.hostlist import expand_hostlist  # noqa: E402
from slurm_gpu.lab import clients  # noqa: E402
from slurm_gpu.lab.control import Lab, LabPaths, lab_dir_from_env  # noqa: E402
from slurm_gpu.lab.jobsubmit import PASS_THROUGH, install_text  # noqa: E402
from slurm_gpu.slurm.topology_show import parse_show_topology  # noqa: E402

USER = "labuser"


def stream(n: int, seed: int, two_node: float = 0.45, long_single: bool = False) -> list[tuple[float, list[str]]]:
    """(arrival offset s, sbatch options) per job: a share ``two_node`` of 2-node jobs (15-45 s); 1-node jobs
    run 15-45 s, or 40-100 s with ``long_single`` (they then hold nodes under both leaves more often)."""
    rnd, t, out = random.Random(seed), 0.0, []
    for _ in range(n):
        t += rnd.uniform(2, 8)
        if rnd.random() < two_node:
            run = rnd.randint(15, 45)
            opts = ["-N", "2", "--gres=gpu:a100:4"]
        else:
            run = rnd.randint(40, 100) if long_single else rnd.randint(15, 45)
            opts = ["-N", "1", f"--gres=gpu:a100:{rnd.randint(1, 4)}"]
        out.append((t, [*opts, "-t", "5", "-o", "/dev/null", "--wrap", f"sleep {run}"]))
    return out


def _time(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def run_way(conf: str, policy: str, jobs: list[tuple[float, list[str]]], way: str, cwd: str,
            gpusub: str) -> list[tuple[bool, float]]:
    """Submit the stream one way; (local, wait s) per 2-node job."""
    leaves = [frozenset(u.nodes) for u in parse_show_topology(
        clients.run(["scontrol", "show", "topology"], conf, timeout_s=15, check=True).stdout) if u.level == 0]
    start, ids = time.monotonic(), []
    for at, opts in jobs:
        time.sleep(max(0.0, at - (time.monotonic() - start)))
        if way == "plain":
            ids.append((clients.sbatch(opts, conf, user=USER, cwd=cwd), opts))
        else:
            p = clients.run([gpusub, "--parsable", *opts], conf, user=USER, cwd=cwd, timeout_s=60,
                            env_extra={"GPUSUB_POLICY": policy}, check=True)
            ids.append((int(p.stdout.strip().split(";")[0]), opts))
    out = []
    for j, opts in ids:
        clients.wait_job(conf, j, {"RUNNING", "COMPLETED"}, timeout_s=900)
        if opts[1] != "2":
            continue
        fields, _ = clients.show_job(conf, j)
        nodes = frozenset(expand_hostlist(fields["NodeList"]))
        out.append((any(nodes <= leaf for leaf in leaves), _time(fields["StartTime"]) - _time(fields["SubmitTime"])))
    for j, _ in ids:
        clients.wait_job(conf, j, {"COMPLETED"}, timeout_s=900)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=14)
    ap.add_argument("--seed", type=int, default=8)
    ap.add_argument("--two-node", type=float, default=0.45, help="share of 2-node jobs [0.45]")
    ap.add_argument("--long-single", action="store_true", help="1-node jobs run 40-100 s (spread free nodes)")
    args = ap.parse_args()
    lab = Lab(LabPaths(lab_dir_from_env()))
    conf = lab.slurm_conf
    policy = lab._read("policy") or ""
    from slurm_gpu.lab.demo import find_gpusub

    gpusub = find_gpusub()
    if not policy or gpusub is None:
        print("bench_topology: the fabric lab is not up (slurm-gpu lab up --policy examples/policies/fabric-lab.yaml)",
              file=sys.stderr)
        return 2
    cwd = lab.paths.jobs_dir
    jobs = stream(args.jobs, args.seed, args.two_node, args.long_single)
    conf_dir = os.path.dirname(conf)
    lua = os.path.join(conf_dir, "job_submit.lua")
    results = {}
    before = open(lua, encoding="utf-8").read() if os.path.exists(lua) else None
    try:
        if before is not None:
            install_text(PASS_THROUGH, conf_dir)
        results["plain"] = run_way(conf, policy, jobs, "plain", cwd, gpusub)
    finally:
        if before is not None:
            install_text(before, conf_dir)
    results["gpusub"] = run_way(conf, policy, jobs, "gpusub", cwd, gpusub)
    print(f"P8: {len(jobs)} jobs ({sum(1 for _, o in jobs if o[1] == '2')} on 2 nodes), seed {args.seed}"
          f"{', long 1-node jobs' if args.long_single else ''}, 2 leaf switches of 2 a100 nodes, class switches 1@1:00")
    med = {}
    for way, rows in results.items():
        local = sum(1 for ok, _ in rows if ok)
        med[way] = statistics.median(w for _, w in rows) if rows else 0.0
        print(f"  {way:7s} 2-node jobs local: {local}/{len(rows)} ({100 * local / max(1, len(rows)):.0f}%), "
              f"median wait {med[way]:.0f} s, max {max((w for _, w in rows), default=0):.0f} s")
    print(f"  median wait added by gpusub: {med['gpusub'] - med['plain']:+.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
