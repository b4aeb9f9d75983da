# SPDX-License-Identifier: Apache-2.0
"""Benchmark: ``slurm-gpu report`` over a large window of accounting rows: peak memory per row against
the rows' own size, and the time (docs/report.md "Large windows"; issue 22: 300,000 rows under 100 MB).

The rows are generated in the lab's real ``sacct -a -X -D -P`` format (the report's --format, as in
tests/cluster/data/sacct-22.05/report.txt): 200 users in 20 accounts, partitions batch/interactive/spot
with their QOS, states as a busy site has them (REQUEUED and PREEMPTED runs of spot jobs, FAILED,
TIMEOUT, CANCELLED by 0), 1-16 GPUs of h100/a100 (a tenth CPU-only rows), submit/start/end over 7 days,
and the epilog's AdminComment summary (summary_codec.encode, one row per GPU, half of them lower-cased
as sacctmgr stores them) on 60 % of the GPU rows. They are written to a file, and each way of reading
them runs in its own child process that reports its peak RSS (``getrusage`` ru_maxrss) over the RSS it
had before it read anything, and its wall time:

- ``stream``: what the report does now: the rows come from a command's stdout through the one runner's
  streaming call (``stream_slurm``; ``cat`` of the file stands in for sacct's process: the same pipe),
  are parsed row by row (``iter_sacct``) and aggregated in one pass for --by and the HTML's by-account
  table (``reports``);
- ``whole``: the former way: the whole stdout as one text (``run_slurm``), every row parsed into a list
  (``parse_sacct``), then the report and the by-account report from that list.

    .venv/bin/python benchmarks/bench_report.py [--rows 300000] [--goal-mb 100]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

HEADER = "JobID|JobIDRaw|User|Account|Partition|QOS|State|Submit|Start|End|ElapsedRaw|AllocTRES|AdminComment"
T0 = 1_764_547_200  # 2025-12-01T00:00:00Z


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def generate(path: str, rows: int, seed: int = 22) -> int:
    """Write ``rows`` rows (and the header) to ``path``; returns the bytes written."""
    from slurm_gpu.cluster.summary_codec import encode

    rng = random.Random(seed)
    pool: dict[int, list[str]] = {}  # GPUs -> summaries of that many GPUs (sampled: encoding is slow)
    for g in (1, 2, 4, 8, 16):
        pool[g] = []
        for _ in range(400):
            per_node: dict[str, list[dict[str, float]]] = {}
            for k in range(g):
                start = T0 + rng.randrange(7 * 86400)
                per_node.setdefault(f"gpu{rng.randrange(100):03d}-{k // 8}", []).append({
                    "gpu_index": k % 8, "gpu_util_pct": rng.choice((0, rng.uniform(0, 100), 97.5)),
                    "mem_util_pct": rng.uniform(0, 100), "max_memory_bytes": rng.randrange(1 << 30, 80 << 30),
                    "energy_j": rng.uniform(1e3, 5e7), "start": start, "end": start + rng.randrange(60, 86400)})
            text = encode(per_node)
            pool[g].append(text.lower() if rng.random() < 0.5 else text)
    size = 0
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(HEADER + "\n")
        size += len(HEADER) + 1
        jid = 100_000
        for _ in range(rows):
            jid += rng.randrange(1, 3)
            user = rng.randrange(200)
            part, qos = rng.choices((("batch", "normal"), ("interactive", "debug"), ("spot", "spot")), (7, 2, 1))[0]
            state = rng.choices(("COMPLETED", "FAILED", "TIMEOUT", "CANCELLED by 0", "REQUEUED", "PREEMPTED"),
                                (80, 6, 4, 4, 4 if part == "spot" else 0, 2 if part == "spot" else 0))[0]
            submit = T0 + rng.randrange(7 * 86400)
            start = submit + int(rng.expovariate(1 / 600))
            elapsed = int(min(2 * 86400, rng.lognormvariate(7.5, 1.5)))
            if rng.random() < 0.1:
                tres, comment = f"billing=4,cpu=4,mem={rng.choice((4000, 16000))}M,node=1", ""
            else:
                g = rng.choices((1, 2, 4, 8, 16), (50, 15, 15, 15, 5))[0]
                gtype = rng.choice(("h100", "a100"))
                tres = (f"billing={4 * g},cpu={4 * g},gres/gpu:{gtype}={g},gres/gpu={g},mem={60 * g}G,"
                        f"node={max(1, g // 8)}")
                comment = rng.choice(pool[g]) if rng.random() < 0.6 else ""
            line = (f"{jid}|{jid}|u{user:03d}|acct{user % 20:02d}|{part}|{qos}|{state}|{_iso(submit)}|{_iso(start)}|"
                    f"{_iso(start + elapsed)}|{elapsed}|{tres}|{comment}\n")
            fh.write(line)
            size += len(line)
    return size


def child(mode: str, path: str) -> None:
    """One way of reading the rows (a fresh process: its peak RSS is its own)."""
    from slurm_gpu.adapters.slurm import run_slurm, stream_slurm
    from slurm_gpu.cluster.report import report, reports
    from slurm_gpu.slurm.sacct import iter_sacct, parse_sacct

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    if mode == "stream":
        with stream_slurm(["cat", path], timeout_s=600, what="cat") as lines:
            doc, _by_account = reports(iter_sacct(lines), None, ("class", "account"), "S", "E")
    else:
        rows = parse_sacct(run_slurm(["cat", path], timeout_s=600, check=True).stdout)
        doc, _by_account = report(rows, None, "class", "S", "E"), report(rows, None, "account", "S", "E")
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"mode": mode, "wall_s": wall, "base_kib": base, "peak_kib": peak,
                      "jobs": doc["total"]["jobs"], "gpu_hours": doc["total"]["gpu_hours"],
                      "efficiency": doc["total"]["efficiency"]}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=300_000)
    ap.add_argument("--goal-mb", type=float, default=100.0, help="peak memory of the stream way, MB")
    ap.add_argument("--child", nargs=2, metavar=("MODE", "FILE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "sacct.txt")
        t0 = time.perf_counter()
        size = generate(path, args.rows)
        print(f"rows: {args.rows:,} in the lab's sacct -P format, {size / 1e6:.1f} MB "
              f"({size / args.rows:.0f} bytes per row), generated in {time.perf_counter() - t0:.1f} s")
        got = {}
        for mode in ("stream", "whole"):
            out = subprocess.run([sys.executable, __file__, "--child", mode, path], capture_output=True, text=True,
                                 check=True, timeout=1800)
            got[mode] = r = json.loads(out.stdout)
            grown = (r["peak_kib"] - r["base_kib"]) * 1024
            print(f"{mode:6}: {r['wall_s']:.2f} s, peak RSS {r['peak_kib'] / 1024:.1f} MiB "
                  f"({r['base_kib'] / 1024:.1f} before reading, +{grown / 2**20:.1f} MiB: "
                  f"{grown / args.rows:.0f} bytes per row = {grown / size:.2f} x the rows' own size)")
        same = all(got["stream"][k] == got["whole"][k] for k in ("jobs", "gpu_hours", "efficiency"))
        print(f"the same report both ways: {same} ({got['stream']['jobs']:,} GPU rows, "
              f"{got['stream']['gpu_hours']:,.0f} GPU-hours, E = {got['stream']['efficiency']})")
        peak_mb = got["stream"]["peak_kib"] * 1024 / 1e6
        growth = {m: max(1, got[m]["peak_kib"] - got[m]["base_kib"]) for m in got}
        print(f"stream: peak {peak_mb:.1f} MB (goal < {args.goal_mb:.0f} MB); whole / stream: time "
              f"{got['whole']['wall_s'] / got['stream']['wall_s']:.2f}x, "
              f"memory growth {growth['whole'] / growth['stream']:.0f}x")
        return 0 if same and peak_mb < args.goal_mb else 1


if __name__ == "__main__":
    sys.exit(main())
