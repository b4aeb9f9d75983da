# SPDX-License-Identifier: Apache-2.0
"""Benchmark: ``simulate()`` of a trace that overloads its cluster, against the same jobs unloaded
(docs/simulate.md "Under load"; issue 22: a 50,000-job overloaded trace on 8 GPUs in under 60 s).

The cluster: one node of 8 h100 in the P5 benchmark's three partitions (benchmarks/bench_simulate.py:
batch, prio, spot; backfill on with Slurm's defaults, preemption on). The jobs: P5's shapes cut to one
node (1, 2, 4 or 8 GPUs, in P5's proportions; log-normal run times, median 30 min), seeded. Overloaded:
Poisson arrivals offering 2.0 times the cluster's GPU-seconds, so the queue grows all along (to about
half the trace); unloaded: the same jobs offering 0.5. Side by side in one run, one core each:

- the wall time of each and their ratio (the price of a long queue: it should be a small constant);
- the overloaded trace at half the size, so that the two overloaded times show the growth with size
  (2.0 for time proportional to the size; a quadratic queue scan gives 4).

    .venv/bin/python benchmarks/bench_simulate_overload.py [--jobs 50000] [--gpus 8] [--load 2.0] [--goal 60]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_simulate import POLICY, SIZES, synth  # noqa: E402

from slurm_gpu.policy.load import load_policy  # noqa: E402
from slurm_gpu.sim.engine import Result, simulate  # noqa: E402
from slurm_gpu.sim.params import Params  # noqa: E402
from slurm_gpu.sim.traces import read_csv  # noqa: E402


def timed(jobs: int, gpus: int, load: float, policy: object) -> tuple[float, Result]:
    shapes = tuple((g, w) for g, w in SIZES if g <= 8)  # one node's GPUs at most
    trace = read_csv(synth(jobs, gpus, load, shapes_of=shapes), "synthetic.csv")
    t0 = time.perf_counter()
    result = simulate(trace, policy, Params())  # type: ignore[arg-type]
    return time.perf_counter() - t0, result


def describe(label: str, wall: float, r: Result) -> str:
    waits = sorted((j.first_start or 0) - j.submit for j in r.jobs)
    days = (r.finish - r.begin) / 86400
    return (f"{label}: {len(r.jobs):,} jobs ({len(r.rejected)} rejected), {days:,.0f} simulated days, "
            f"{wall:.2f} s wall, {r.passes:,} passes, wait p50 {waits[len(waits) // 2] / 3600:,.1f} h")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=50_000)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--load", type=float, default=2.0, help="the overloaded trace's offered load")
    ap.add_argument("--unloaded", type=float, default=0.5, help="the unloaded trace's offered load")
    ap.add_argument("--goal", type=float, default=60.0, help="seconds for the overloaded trace")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.yaml")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(POLICY.format(nodes=max(1, args.gpus // 8)))
        policy = load_policy(path)
    over, r_over = timed(args.jobs, args.gpus, args.load, policy)
    under, r_under = timed(args.jobs, args.gpus, args.unloaded, policy)
    half, r_half = timed(args.jobs // 2, args.gpus, args.load, policy)
    print(describe(f"overloaded (load {args.load})", over, r_over))
    print(describe(f"unloaded (load {args.unloaded})", under, r_under))
    print(describe("overloaded, half the jobs", half, r_half))
    print(f"overloaded / unloaded wall time: {over / under:.2f}")
    print(f"overloaded {args.jobs:,} / {args.jobs // 2:,} jobs wall time: {over / half:.2f} (2.0: linear)")
    print(f"overloaded: {over:.1f} s (goal < {args.goal:.0f} s)")
    return 0 if over < args.goal else 1


if __name__ == "__main__":
    sys.exit(main())
