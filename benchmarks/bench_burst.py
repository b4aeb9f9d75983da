# SPDX-License-Identifier: Apache-2.0
"""Benchmark R5 (issue 22): a burst of 2,000 submissions, gpusub and plain sbatch mixed, from 4
concurrent submitters, with and without slurm-gpu in Slurm.

Two private labs side by side, as root (never the shared /tmp/slurm-gpu-lab), both brought up fresh:
``--lab-dir`` (default /tmp/slurm-gpu-lab-burst, ports from 46817) runs the lab policy compiled into
job_submit.lua and the node hooks (Prolog, Epilog, TaskProlog, the hook agents), as ``lab up`` does by
default; ``--plain-lab-dir`` (/tmp/slurm-gpu-lab-burst-plain, 47817) runs neither (``lab up
--no-job-submit`` with ``SLURM_GPU_LAB_NODE_HOOKS=0``; ``--second lua`` or ``hooks``: one of the two, to
tell their shares apart). The same seeded burst (``slurm_gpu.lab.burst``:
real-shaped requests over the lab policy's classes, tiny commands, a few that the policy refuses) goes
to each in turn, first to the lab with the plugin and hooks (``--plain-first`` flips it): the lab user's
4 submitters, all at once, each its quarter, every call timed. Each job's outcome is predicted by the
classifier beforehand (what ``gpusub --explain`` says); then the benchmark waits until every job is
final and compares what slurmctld (squeue) and slurmdbd (sacct) recorded with the prediction.

Prints, for both labs: submitted (got an id), refused (with the policy's message), completed,
mismatched (partition/QOS other than predicted), the other problems by kind, drained or down nodes,
the submit rate and per-call latency of each tool, and the ratio of the submit rates with/without.
Without the plugin, plain sbatch jobs the policy would refuse are Slurm's to judge (it takes some and
leaves them pending for good, cancelled at the end) and some land elsewhere: those counts describe Slurm
alone, not a failure.

Usage (as root):  .venv/bin/python benchmarks/bench_burst.py [--jobs 2000] [--seed 0] [--rounds 1]
                  [--second none|lua|hooks] [--keep-up]
``--rounds R`` splits the burst into R rounds alternating between the labs (the order flips every round),
for a machine whose load drifts. All nodes of a lab share this machine's CPUs, so the hooks' work
(a Prolog and an Epilog per GPU job) competes with the submitters here, as it would not on a cluster.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_job_submit as p2  # noqa: E402  (its lab_up/lab_down/scontrol_config/jobs_in_memory)

from slurm_gpu.lab import burst  # noqa: E402
from slurm_gpu.lab.config import LabPaths  # noqa: E402
from slurm_gpu.lab.control import Lab  # noqa: E402
from slurm_gpu.lab.demo import find_gpusub  # noqa: E402
from slurm_gpu.lab.nodehooks import ENV_SWITCH  # noqa: E402

USER = p2.USER


SECOND = {"none": (False, False), "lua": (True, False), "hooks": (False, True)}  # (plugin, node hooks)
SECOND_NAMES = {"none": "without", "lua": "Lua, no hooks", "hooks": "hooks, no Lua"}


def up(lab_dir: str, port_base: int, lua: bool, hooks: bool) -> str:
    """A fresh lab with or without the compiled policy and the node hooks; its slurm.conf."""
    p2.lab_down(lab_dir, port_base)  # fresh: no records of an earlier run (job_submit/lua reads them all)
    os.environ[ENV_SWITCH] = "1" if hooks else "0"
    conf = p2.lab_up(lab_dir, port_base, lua, None)  # checks JobSubmitPlugins
    prolog = p2.scontrol_config(conf).get("Prolog", "")
    if hooks != ("node-hooks" in prolog):
        raise SystemExit(f"bench_burst: {lab_dir}: Prolog={prolog!r}, expected {'the node hooks' if hooks else 'none'}")
    return conf


def latency(jobs: tuple[burst.BurstJob, ...], result: burst.BurstResult, tool: str) -> str:
    tools = {j.index: j.tool for j in jobs}
    times = sorted(s.seconds for s in result.burst.submissions if tools[s.index] == tool)
    if not times:
        return "-"
    return f"{statistics.median(times) * 1000:.0f} / {times[int(0.95 * (len(times) - 1))] * 1000:.0f} ms"


def report(jobs: tuple[burst.BurstJob, ...], results: dict[str, burst.BurstResult], held: dict[str, int],
           loads: dict[str, list[float]], rounds: int) -> None:
    names = list(results)
    tools = {t: sum(1 for j in jobs if j.tool == t) for t in burst.BOTH}
    predicted_refused = sum(1 for j in jobs if not results[names[0]].predicted[j.index].accepted)
    print(f"\nR5: a burst of {len(jobs)} submissions ({tools['gpusub']} gpusub, {tools['sbatch']} plain sbatch; "
          f"{predicted_refused} the policy refuses) from {burst.SUBMITTERS} concurrent submitters as {USER}"
          + (f", in {rounds} rounds of {len(jobs) // rounds} alternating between the labs" if rounds > 1 else ""))
    rows: list[tuple[str, list[str]]] = []

    def row(label: str, values: list[str]) -> None:
        rows.append((label, values))

    row("submitted (got a job id)", [str(results[n].tally.submitted) for n in names])
    row("refused with the policy's message", [str(results[n].tally.refused) for n in names])
    row("completed", [str(results[n].tally.completed) for n in names])
    row("mismatched (partition/QOS)", [str(len(results[n].tally.mismatched)) for n in names])
    for kind, what in burst.PROBLEMS.items():
        counts = [results[n].tally.count(kind) for n in names]
        if any(counts):
            row(what, [str(c) for c in counts])
    row("drained/down nodes", [str(len(results[n].drained_after)) for n in names])
    row("submit wall time", [f"{results[n].burst.wall_s:.1f} s" for n in names])
    row("submit rate", [f"{results[n].burst.rate:.2f} /s" for n in names])
    for tool in burst.BOTH:
        row(f"{tool} call, median / p95", [latency(jobs, results[n], tool) for n in names])
    row("all final after the burst", [f"{results[n].drain_s:.1f} s" for n in names])
    row("job records in slurmctld at the end", [str(held[n]) for n in names])
    row("load average (1 min), mean / max", [f"{statistics.mean(loads[n]):.1f} / {max(loads[n]):.1f}" for n in names])
    width = max(len(label) for label, _ in rows)
    print(f"  {'':{width}}  " + "  ".join(f"{n:>24}" for n in names))
    for label, values in rows:
        print(f"  {label:{width}}  " + "  ".join(f"{v:>24}" for v in values))
    for name in names:
        t = results[name].tally
        places = ", ".join(f"{k} {v}" for k, v in sorted(t.by_place.items()))
        print(f"  {name}: completed by partition/QOS: {places}")
        for line in (list(t.mismatched) + [p.text for p in t.problems])[:5]:
            print(f"    e.g. {line}")
        for node, why in results[name].drained_after.items():
            print(f"    node {node}: {why}")
    with_, without = results[names[0]], results[names[1]]
    ratio = with_.burst.rate / without.burst.rate if without.burst.rate else float("nan")
    print(f"\nsubmit rate ratio {names[0]} / {names[1]} = {ratio:.3f}")
    known = with_.tally.count("preempted")
    others = len(with_.tally.problems) - known + len(with_.tally.mismatched)
    verdict = "every job accounted for" if not others else f"NOT every job accounted for ({others})"
    print(f"with the plugin and hooks: {verdict}; {with_.tally.completed} completed, {known} preempted as they "
          f"started and killed by the stop signal (docs/lab.md); {len(with_.drained_after)} nodes drained")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2000, help="submissions in the burst [2000]")
    ap.add_argument("--seed", type=int, default=0, help="the burst's seed [0]")
    ap.add_argument("--lab-dir", default="/tmp/slurm-gpu-lab-burst", help="the lab with the plugin and hooks")
    ap.add_argument("--port-base", type=int, default=46817)
    ap.add_argument("--plain-lab-dir", default="/tmp/slurm-gpu-lab-burst-plain", help="the second lab (without either)")
    ap.add_argument("--plain-port-base", type=int, default=47817)
    ap.add_argument("--second", choices=sorted(SECOND), default="none",
                    help="what the second lab runs: none (the R5 comparison), lua (the plugin without the hooks: "
                         "the ratio is then the hooks' share) or hooks (the hooks without the plugin) [none]")
    ap.add_argument("--plain-first", action="store_true", help="send the burst to the plain lab first")
    ap.add_argument("--rounds", type=int, default=1,
                    help="split the burst into this many rounds, alternating between the labs (the order flips "
                         "every round), so that load drift on a shared machine hits both alike [1: one burst each]")
    ap.add_argument("--timeout", type=float, default=1200, help="seconds to wait for the jobs after a burst")
    ap.add_argument("--keep-up", action="store_true", help="leave both labs up")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.jobs < burst.SUBMITTERS * args.rounds:
        ap.error(f"--rounds must be positive and --jobs at least {burst.SUBMITTERS} per round")
    if os.geteuid() != 0:
        ap.error("run as root (it starts two labs)")
    labs = {"with Lua + hooks": (args.lab_dir, args.port_base, True, True),
            SECOND_NAMES[args.second]: (args.plain_lab_dir, args.plain_port_base, *SECOND[args.second])}
    saved = os.environ.get(ENV_SWITCH)
    print("bringing up two fresh labs (the shared one is never touched):")
    try:
        confs = {name: up(d, p, lua, hooks) for name, (d, p, lua, hooks) in labs.items()}
        jobs = burst.job_mix(args.jobs, args.seed)
        parts: dict[str, list[burst.BurstResult]] = {name: [] for name in labs}
        loads: dict[str, list[float]] = {name: [] for name in labs}
        order = list(labs)[::-1] if args.plain_first else list(labs)
        for rnd in range(args.rounds):
            chunk = jobs[rnd * len(jobs) // args.rounds:(rnd + 1) * len(jobs) // args.rounds]
            for name in (order if rnd % 2 == 0 else order[::-1]):
                lab_dir, _, _, on = labs[name]
                t0 = time.monotonic()

                def say(msg: str, name: str = name, t0: float = t0, rnd: int = rnd) -> None:
                    print(f"  [{name}, round {rnd + 1}/{args.rounds}, {time.monotonic() - t0:6.1f} s] {msg}",
                          flush=True)

                loads[name].append(os.getloadavg()[0])
                parts[name].append(burst.run_burst(
                    lab_dir, confs[name], Lab(LabPaths(lab_dir)).env_vars()["GPUSUB_POLICY"], USER,
                    find_gpusub(lab_dir, USER) or "gpusub", chunk, hooks=on, timeout_s=args.timeout, say=say))
                loads[name].append(os.getloadavg()[0])
        results = {name: burst.combine(parts[name]) for name in labs}
        held = {name: p2.jobs_in_memory(confs[name]) for name in labs}
        report(jobs, results, held, loads, args.rounds)
    finally:
        if saved is None:
            os.environ.pop(ENV_SWITCH, None)
        else:
            os.environ[ENV_SWITCH] = saved
        if not args.keep_up:
            for d, p, _, _ in labs.values():
                p2.lab_down(d, p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
