# SPDX-License-Identifier: Apache-2.0
"""Benchmark P5: jobs simulated per minute on one core, a 100,000-job trace on a 2,000-GPU cluster,
backfill on (docs/simulate.md "Benchmark P5").

The cluster: 250 nodes x 8 h100 in two partitions that share them, ``batch`` (tier 5, the default)
and ``spot`` (tier 1, preemptible, grace 120 s); a ``prio`` partition (tier 10) that preempts spot.
The trace is synthetic, seeded, in the Slurm-native CSV of the public GPU traces (Helios/Acme
columns, no time_limit column: limits come from the simulator's documented rule). No public trace
publishes its distributions as numbers in our notes (../shared/notes/traces-and-simulators.md lists
columns and sizes only), so the shapes are ours, chosen after the Helios paper's qualitative picture
(most GPU jobs use one GPU; a few use many nodes; run times are heavy-tailed):
- GPUs per job: 1 (55 %), 2 (12 %), 4 (13 %), 8 (15 %), 16 (3 %), 32 (1.5 %), 64 (0.5 %);
- run time: log-normal, median 30 min, sigma 1.5, cut to 1 min .. 2 days;
- partition: 10 % spot, 2 % prio, the rest routed by the policy (batch);
- arrivals: Poisson, at the rate that offers --load (default 0.9) of the cluster's GPU-seconds.

Measured: the wall time of ``simulate()`` (the trace already read: reading is timed apart), as jobs
per minute (goal >= 100,000) and simulated days per wall hour (UB's slurm_sim_tools: 17).

    .venv/bin/python benchmarks/bench_simulate.py [--jobs 100000] [--gpus 2000] [--load 0.9] [--profile]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from slurm_gpu.policy.load import load_policy  # noqa: E402
from slurm_gpu.sim.engine import simulate  # noqa: E402
from slurm_gpu.sim.params import Params  # noqa: E402
from slurm_gpu.sim.traces import read_csv  # noqa: E402

POLICY = """version: 1
name: bench
gpu_types: [{{name: h100, memory_gb: 80}}]
node_types:
  - {{name: h100x8, topology: none.yaml, gpu_type: h100, gpus: 8, nodes: "g[0001-{nodes:04d}]"}}
partitions:
  - {{name: batch, node_types: [h100x8], max_time: 2-00:00:00, default_time: 4h, priority_tier: 5, default: true,
      allowed_qos: [normal], default_qos: normal}}
  - {{name: prio, node_types: [h100x8], max_time: 2-00:00:00, default_time: 4h, priority_tier: 10,
      allowed_qos: [high], default_qos: high}}
  - {{name: spot, node_types: [h100x8], max_time: 2-00:00:00, default_time: 4h, priority_tier: 1,
      preemptible: true, grace_time: 120s, allowed_qos: [spot], default_qos: spot}}
qos:
  - {{name: normal, priority: 50, max_gpus_per_job: 256}}
  - {{name: high, priority: 200, max_gpus_per_job: 256, preempts: [spot]}}
  - {{name: spot, priority: 10, max_gpus_per_job: 256, preempt_mode: requeue}}
classes:
  - {{name: prio, match: {{explicit: true, min_gpus: 1}}, partition: prio, qos: high}}
  - {{name: spot, match: {{explicit: true, min_gpus: 1}}, partition: spot, qos: spot}}
  - {{name: batch, match: {{min_gpus: 1}}, partition: batch, qos: normal}}
defaults: {{cpus_per_gpu: 8, max_requeues: 3}}
"""
SIZES = ((1, 0.55), (2, 0.12), (4, 0.13), (8, 0.15), (16, 0.03), (32, 0.015), (64, 0.005))


def synth(jobs: int, gpus: int, load: float, seed: int = 14,
          shapes_of: tuple[tuple[int, float], ...] = SIZES) -> list[str]:
    rng = random.Random(seed)
    sizes, weights = zip(*shapes_of, strict=True)
    median, sigma = 1800.0, 1.5
    shapes = [(rng.choices(sizes, weights)[0],
               int(min(2 * 86400, max(60, rng.lognormvariate(math.log(median), sigma))))) for _ in range(jobs)]
    rate = load * gpus * jobs / sum(g * run for g, run in shapes)  # jobs per second offering `load`
    t = 1_600_000_000.0
    lines = ["job_id,user,gpu_num,node_num,state,submit_time,duration,partition"]
    for i, (g, run) in enumerate(shapes):
        t += rng.expovariate(rate)
        u = rng.random()
        part = "spot" if u < 0.10 else "prio" if u < 0.12 else ""
        lines.append(f"{i},u{rng.randrange(200)},{g},{max(1, g // 8)},COMPLETED,{int(t)},{run},{part}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--gpus", type=int, default=2000)
    ap.add_argument("--load", type=float, default=0.9)
    ap.add_argument("--profile", action="store_true", help="print the top of a cProfile of the run")
    ap.add_argument("--goal", type=float, default=100_000.0, help="jobs per minute")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.yaml")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(POLICY.format(nodes=args.gpus // 8))
        policy = load_policy(path)
    lines = synth(args.jobs, args.gpus, args.load)
    t0 = time.perf_counter()
    trace = read_csv(lines, "synthetic.csv")
    t_read = time.perf_counter() - t0
    params = Params()
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
    t0 = time.perf_counter()
    result = simulate(trace, policy, params)
    wall = time.perf_counter() - t0
    if args.profile:
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(18)
    days = (result.finish - result.begin) / 86400
    per_min = len(result.jobs) / wall * 60
    waits = sorted((j.first_start or 0) - j.submit for j in result.jobs)
    used = sum(j.gpu_s for j in result.jobs) / (result.gpus * max(1, result.finish - result.begin))
    print(f"trace: {len(trace.jobs)} jobs ({result.gpus} GPUs, load {args.load}), read in {t_read:.2f} s; "
          f"{len(result.rejected)} rejected")
    print(f"simulated {len(result.jobs)} jobs, {days:.1f} days, in {wall:.2f} s wall ({result.passes} passes)")
    print(f"jobs per minute: {per_min:,.0f} (goal >= {args.goal:,.0f})")
    print(f"simulated days per wall hour: {days / wall * 3600:,.0f} (UB slurm_sim_tools: 17)")
    print(f"GPU utilisation {used:.3f}; wait p50 {waits[len(waits) // 2]} s, p95 {waits[int(len(waits) * 0.95)]} s; "
          f"preemptions {sum(j.preempted for j in result.jobs)}")
    return 0 if per_min >= args.goal else 1


if __name__ == "__main__":
    sys.exit(main())
