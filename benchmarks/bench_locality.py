# SPDX-License-Identifier: Apache-2.0
"""Benchmark P4: GPU-core locality and GPU allocation rate, plain sbatch vs gpusub, in the lab.

A fixed (seeded) mixed stream of CPU-only jobs that occupy cores and 1-, 2-, 4- and 8-GPU jobs
(h100 and a100) is submitted twice to the running lab: once the way users do today
(``sbatch --gres=gpu:TYPE:N --ntasks=N``) and once with ``gpusub``. Each GPU job's allocation is read
from ``scontrol show job -d`` while it runs and checked against the node's gres.conf ``Cores=``
(slurm_gpu.locality). Printed per way: the share of GPU jobs meeting the rule, and GPUs allocated
per minute (GPU count / time from first submission to the last GPU job's start); then the ratio.

Usage (lab up, as root):  .venv/bin/python benchmarks/bench_locality.py [--jobs 24] [--seed 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from slurm_gpu.adapters.slurm import run_slurm  # noqa: E402
from slurm_gpu.locality import check_job, parse_gres_conf  # noqa: E402
from slurm_gpu.slurm.records import parse_parsable  # noqa: E402

GPU_SHAPES = [("h100", 1), ("h100", 2), ("h100", 4), ("h100", 8), ("a100", 1), ("a100", 2), ("a100", 3), ("a100", 4)]


def lab_env() -> dict[str, str]:
    env = dict(os.environ)
    if "SLURM_CONF" not in env:
        out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "slurm-gpu"), "lab", "env"],
                             capture_output=True, text=True, timeout=30).stdout
        for line in out.splitlines():
            if line.startswith("export ") and "=" in line and "PATH" not in line:
                k, v = line[7:].split("=", 1)
                env[k] = v.strip('"')
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def stream(n_jobs: int, seed: int) -> list[dict]:
    """The workload: two CPU-only jobs first, then about one CPU-only job per two GPU jobs; CPU jobs
    take 6-14 cores (the scheduler puts them on socket 0 first), durations 8-20 s."""
    rng = random.Random(seed)
    jobs = []
    for i in range(n_jobs):
        if i % 3 == 2 or i < 2:
            jobs.append({"kind": "cpu", "cpus": rng.choice([6, 10, 12, 14]), "sleep": rng.randint(8, 20)})
        else:
            gtype, count = rng.choice(GPU_SHAPES)
            jobs.append({"kind": "gpu", "type": gtype, "gpus": count, "sleep": rng.randint(8, 20)})
    return jobs


def run(argv: list[str], env: dict[str, str], cwd: str, timeout_s: float = 30, check: bool = True) -> str:
    """Every Slurm call (and gpusub's) through the project's one runner, under a timeout."""
    return run_slurm(argv, env=env, cwd=cwd, timeout_s=timeout_s, check=check).stdout


def sbatch(argv: list[str], env: dict[str, str], cwd: str) -> int:
    result = parse_parsable(run(["sbatch", "--parsable", *argv], env, cwd))
    if result is None:
        raise RuntimeError(f"sbatch printed no job id for {argv}")
    return result.job_id


def submit(job: dict, way: str, env: dict[str, str], work: str) -> int:
    script = os.path.join(work, f"sleep{job['sleep']}.sh")
    if not os.path.exists(script):
        with open(script, "w") as fh:
            fh.write(f"#!/bin/bash\nsleep {job['sleep']}\n")
        os.chmod(script, 0o755)
    common = ["-p", "batch", "-t", "2", "--mem=8G"]
    if job["kind"] == "cpu":
        return sbatch([*common, "-n1", f"-c{job['cpus']}", script], env, work)
    gres = f"--gres=gpu:{job['type']}:{job['gpus']}"
    if way == "plain":
        return sbatch([*common, gres, f"--ntasks={job['gpus']}", script], env, work)
    gpusub = os.path.join(os.path.dirname(sys.executable), "gpusub")
    out = run([gpusub, "--json", "--launch", "batch", *common, gres, script], env, work)
    return int(json.loads(out)["job_id"])


def one_pass(way: str, jobs: list[dict], env: dict[str, str], gres: dict, timeout_s: float) -> dict:
    work = tempfile.mkdtemp(prefix=f"p4-{way}-", dir=os.environ.get("TMPDIR", "/tmp"))
    start = time.monotonic()
    ids: dict[int, dict] = {}
    for job in jobs:
        ids[submit(job, way, env, work)] = job
    gpu_ids = {j for j, job in ids.items() if job["kind"] == "gpu"}
    started: dict[int, float] = {}
    verdict: dict[int, list[str]] = {}
    while len(started) < len(gpu_ids) and time.monotonic() - start < timeout_s:
        out = run(["squeue", "-h", "-t", "RUNNING", "-o", "%i"], env, work)
        running = {int(x) for x in out.split() if x.isdigit()}
        for j in sorted((running & gpu_ids) - set(started)):
            text = run(["scontrol", "show", "job", "-d", str(j)], env, work)
            started[j] = time.monotonic() - start
            verdict[j] = check_job(text, gres)
        time.sleep(0.5)
    waiting = {}
    for j in sorted(gpu_ids - set(started)):
        job = ids[j]
        reason = run(["squeue", "-h", "-j", str(j), "-o", "%T %r"], env, work, check=False).strip()
        waiting[j] = f"{job['type']}x{job['gpus']}: {reason or 'gone'}"
    run(["scancel", *map(str, ids)], env, work, check=False)
    gpus = sum(ids[j]["gpus"] for j in started)
    span_s = max(started.values()) if started else float("nan")
    ok = sum(1 for j in started if not verdict[j])
    bad = {j: verdict[j] for j in started if verdict[j]}
    return {"way": way, "gpu_jobs": len(gpu_ids), "started": len(started), "ok": ok, "gpus": gpus,
            "span_s": span_s, "gpus_per_min": gpus / (span_s / 60) if started else 0.0, "bad": bad,
            "waiting": waiting}


def wait_idle(env: dict[str, str], timeout_s: float = 60) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if not run(["squeue", "-h", "-o", "%i"], env, "/").split():
            return
        time.sleep(1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=24)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=140, help="seconds per pass")
    args = ap.parse_args()
    env = lab_env()
    with open(os.path.join(os.path.dirname(env["SLURM_CONF"]), "gres.conf")) as fh:
        gres = parse_gres_conf(fh.read())
    jobs = stream(args.jobs, args.seed)
    shapes = ", ".join(f"{j['type']}x{j['gpus']}" if j["kind"] == "gpu" else f"cpu{j['cpus']}" for j in jobs)
    print(f"stream ({len(jobs)} jobs, seed {args.seed}): {shapes}")
    results = []
    for way in ("plain", "gpusub"):
        wait_idle(env)
        results.append(one_pass(way, jobs, env, gres, args.timeout))
    print(f"\n{'way':8} {'GPU jobs':>9} {'started':>8} {'locality ok':>12} {'share':>7} {'GPUs':>5} "
          f"{'span s':>7} {'GPUs/min':>9}")
    for r in results:
        share = r["ok"] / r["started"] if r["started"] else 0.0
        print(f"{r['way']:8} {r['gpu_jobs']:9d} {r['started']:8d} {r['ok']:12d} {share:7.0%} {r['gpus']:5d} "
              f"{r['span_s']:7.1f} {r['gpus_per_min']:9.1f}")
    plain, ours = results
    ratio = ours["gpus_per_min"] / plain["gpus_per_min"] if plain["gpus_per_min"] else float("nan")
    print(f"\nallocation rate gpusub/plain = {ratio:.2f}x (goal >= 0.98x); "
          f"gpusub locality {ours['ok']}/{ours['started']} (goal 100%)")
    for r in results:
        for j, problems in list(r["bad"].items())[:3]:
            print(f"  {r['way']} job {j}: {problems[0]}")
        for j, why in r["waiting"].items():
            print(f"  {r['way']} job {j} not started within {args.timeout:g} s: {why}")
    if any(r["waiting"] for r in results):
        print("  (a pass that did not start every GPU job: its GPUs/min counts only the started ones)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
