# SPDX-License-Identifier: Apache-2.0
"""Adversarial workloads, generated (seeded, pure): the Slurm-native CSV lines of a trace
(``--workload NAME [--jobs N --seed S]``; docs/simulate.md "Adversarial workloads").

Each is sized to the cluster: ``node_gpus`` (GPUs of the largest node) and ``gpus`` (all GPUs). Arrivals
are Poisson at the rate that offers ``load`` of the cluster's GPU-seconds; run times log-normal (median
``median_s``, sigma 1), 1 minute .. 1 day; every job's time limit is its run time's documented rule (no
``time_limit`` column). Times are epoch seconds from 1,700,000,000.

- ``fragment``: bursts of 1-GPU jobs (account ``burst``, 70 % of the jobs, in bursts of 20-60 within a
  minute) that scatter over the nodes, between whole-node jobs (account ``wide``: ``node_gpus`` GPUs on one
  node) that need a node with every GPU free.
- ``gang-starve``: a stream of small jobs (1-4 GPUs, account ``small``) that keeps the cluster busy, and
  every tenth job a wide gang (half the cluster's nodes, whole nodes; account ``gang``) that starves
  unless backfill reserves nodes for it.
- ``split``: two accounts with the same demand: ``honest`` asks for ``node_gpus`` GPUs per job, ``splitter``
  the same work as ``node_gpus`` 1-GPU jobs submitted together (dodging per-job GPU limits and gaining on
  fair share, which counts jobs' usage, not their shape).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

T0 = 1_700_000_000
HEADER = "job_id,user,account,gpu_num,node_num,submit_time,duration"


def _run(rng: random.Random, median_s: float) -> int:
    return int(min(86400, max(60, rng.lognormvariate(math.log(median_s), 1.0))))


def _arrivals(shapes: list[tuple[int, int]], gpus: int, load: float, rng: random.Random) -> list[float]:
    rate = load * gpus * len(shapes) / max(1, sum(g * r for g, r in shapes))
    t, out = float(T0), []
    for _ in shapes:
        t += rng.expovariate(rate)
        out.append(t)
    return out


def fragment(jobs: int, node_gpus: int, gpus: int, rng: random.Random, load: float, median_s: float) -> list[str]:
    rows: list[tuple[str, str, int, int]] = []  # user, account, gpus, run
    p_wide = 0.3 * 40 / (0.7 + 0.3 * 40)  # per draw, so that 30 % of the jobs are wide (a burst: 40 on average)
    while len(rows) < jobs:
        if rng.random() < p_wide:
            rows.append((f"w{rng.randrange(5)}", "wide", node_gpus, _run(rng, median_s)))
        else:
            rows.extend((f"b{rng.randrange(5)}", "burst", 1, _run(rng, median_s / 2))
                        for _ in range(rng.randint(20, 60)))
    rows = rows[:jobs]
    times = _arrivals([(g, r) for _, _, g, r in rows], gpus, load, rng)
    # a burst arrives within a minute: its jobs share the burst's first arrival plus a few seconds
    out, burst_t = [HEADER], times[0]
    for i, ((user, acct, g, run), t) in enumerate(zip(rows, times, strict=True)):
        if acct == "burst" and i and rows[i - 1][1] == "burst":
            t = burst_t + rng.uniform(0, 60)
        else:
            burst_t = t
        out.append(f"{i},{user},{acct},{g},1,{int(t)},{run}")
    return out


def gang_starve(jobs: int, node_gpus: int, gpus: int, rng: random.Random, load: float, median_s: float) -> list[str]:
    nodes = max(1, gpus // max(1, node_gpus))
    wide = max(1, nodes // 2)
    rows = []
    for i in range(jobs):
        if i % 10 == 9:
            rows.append((f"g{rng.randrange(3)}", "gang", wide * node_gpus, wide, _run(rng, median_s)))
        else:
            rows.append((f"s{rng.randrange(10)}", "small", rng.choice((1, 1, 2, 4)), 1, _run(rng, median_s)))
    times = _arrivals([(g, r) for _, _, g, _, r in rows], gpus, load, rng)
    return [HEADER] + [f"{i},{u},{a},{g},{n},{int(t)},{r}" for i, ((u, a, g, n, r), t) in enumerate(zip(rows, times,
                                                                                                    strict=True))]


def split(jobs: int, node_gpus: int, gpus: int, rng: random.Random, load: float, median_s: float) -> list[str]:
    rows: list[tuple[str, str, int, int]] = []
    while len(rows) < jobs:
        run = _run(rng, median_s)
        if rng.random() < 0.5:
            rows.append(("h0", "honest", node_gpus, run))
        else:
            rows.extend(("s0", "splitter", 1, run) for _ in range(node_gpus))
    rows = rows[:jobs]
    times = _arrivals([(g, r) for _, _, g, r in rows], gpus, load, rng)
    out, last = [HEADER], times[0]
    for i, ((u, a, g, r), t) in enumerate(zip(rows, times, strict=True)):
        if a == "splitter" and i and rows[i - 1][1] == "splitter" and rows[i - 1][3] == r:
            t = last  # the pieces of one split request are submitted together
        last = t
        out.append(f"{i},{u},{a},{g},1,{int(t)},{r}")
    return out


WORKLOADS: dict[str, Callable[[int, int, int, random.Random, float, float], list[str]]] = {
    "fragment": fragment, "gang-starve": gang_starve, "split": split}


def generate(name: str, jobs: int, node_gpus: int, gpus: int, seed: int = 14, load: float = 0.9,
             median_s: float = 1800.0) -> list[str]:
    """The CSV lines (header first) of workload ``name``; ValueError for an unknown name or bad sizes."""
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r} (one of {', '.join(WORKLOADS)})")
    if jobs < 1 or node_gpus < 1 or gpus < node_gpus:
        raise ValueError("a workload needs at least one job and a cluster with GPUs")
    return WORKLOADS[name](jobs, node_gpus, gpus, random.Random(seed), load, median_s)
