# SPDX-License-Identifier: Apache-2.0
"""Benchmark: `gpusub --explain --json` vs `python -c 'import click, yaml'`, same interpreter.

Runs both commands alternately for N rounds (default 21) in one process and prints both median
wall times and their ratio. Goal: ratio <= 2.0. Exit 1 when gpusub --explain fails (e.g. not wired
yet), so a missing feature cannot pass silently.

    .venv/bin/python benchmarks/bench_explain.py [--rounds N] [--gpusub PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLICY = os.path.join(ROOT, "examples", "policies", "university.yaml")
SCRIPT = os.path.join(ROOT, "examples", "jobs", "hello-gpu.sh")
SBATCH_OPTS = ["--gpus=h100:2", "--time=02:00:00", "--job-name=bench"]


def interpreter_of(entry_point: str) -> str:
    """The interpreter named in the entry point's shebang line."""
    with open(entry_point, encoding="utf-8") as fh:
        first = fh.readline().strip()
    if not first.startswith("#!"):
        raise SystemExit(f"bench: {entry_point} has no shebang line")
    return first[2:].strip().split()[0]


def timed(argv: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    return time.perf_counter() - t0, proc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--gpusub", default=os.path.join(ROOT, ".venv", "bin", "gpusub"))
    args = ap.parse_args()
    if args.rounds < 15:
        raise SystemExit("bench: use at least 15 rounds")
    if not os.path.exists(args.gpusub):
        print(f"bench: FAIL: gpusub entry point {args.gpusub} not found", file=sys.stderr)
        return 1
    python = interpreter_of(args.gpusub)
    explain = [args.gpusub, "--explain", "--json", "--policy", POLICY, *SBATCH_OPTS, SCRIPT]
    baseline = [python, "-c", "import click, yaml"]
    _, first = timed(explain)  # warm-up and correctness check (also fills the policy cache)
    if first.returncode not in (0, 1) or not first.stdout.lstrip().startswith("{"):
        print(f"bench: FAIL: `gpusub --explain --json` is not working (exit {first.returncode}):\n"
              f"{(first.stderr or first.stdout).strip()[-800:]}", file=sys.stderr)
        return 1
    timed(baseline)
    t_explain, t_base = [], []
    for _ in range(args.rounds):
        t_explain.append(timed(explain)[0])
        t_base.append(timed(baseline)[0])
    m_explain, m_base = statistics.median(t_explain), statistics.median(t_base)
    ratio = m_explain / m_base
    print(f"interpreter: {python}")
    print(f"rounds: {args.rounds} (alternating)")
    print(f"gpusub --explain --json  median {m_explain * 1000:.1f} ms")
    print(f"python -c 'import click, yaml'  median {m_base * 1000:.1f} ms")
    print(f"ratio {ratio:.2f} (goal <= 2.0): {'OK' if ratio <= 2.0 else 'OVER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
