# SPDX-License-Identifier: Apache-2.0
"""Benchmark P4: GPU-core locality and GPU allocation rate, plain sbatch vs gpusub, in the lab.

Jobs are written the way users write them: ``#SBATCH`` lines in the script, one task with torchrun
inside (no CPU count, or ``-c`` = the GPUs' share of cores), or ``--ntasks-per-node=N -c K`` with srun
inside. Both ways get the very same script and the very same command-line options (``-p batch -t 2
--mem=8G``); gpusub adds only what it adds by itself (policy QOS, placement options).

Default mode: a fixed (seeded) mixed stream of CPU-only jobs (6-14 cores) and 1/2/4/8-GPU h100 and
1-4-GPU a100 jobs, submitted once with plain sbatch and once with gpusub, in one run. Each GPU job's
allocation is read (squeue's JSON, the one job reader) when it starts and checked against gres.conf
``Cores=``: every allocated GPU has at least one of the job's cores on its socket
(slurm_gpu.placement.locality.check_job with one core per GPU, which also flags cores remote to all
the job's GPUs). Printed per way: the share of started GPU jobs meeting the rule, GPUs allocated per minute
(GPUs / time from the first submission to the last GPU job's start), and the ratio gpusub/plain;
then each GPU job's start, both ways, and the time each way took to submit the stream (job starts
are polled once all jobs are submitted, so a slower submission shows in the first starts).

``--table``: the placement table of docs/gpusub.md: every shape of :data:`SHAPES`, pinned to one node
(``-w``), both ways, on an idle node and with a CPU-only job holding 8 cores of the node first; prints
CPU_IDs, GPU IDX, locality and whether the job started within ``--start-timeout`` seconds.

Usage (lab up, as root):  .venv/bin/python benchmarks/bench_locality.py [--jobs 24] [--seed 5]
                          .venv/bin/python benchmarks/bench_locality.py --table [--types h100]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from slurm_gpu.adapters.slurm import run_slurm  # noqa: E402
from slurm_gpu.lab.clients import show_job  # noqa: E402
from slurm_gpu.lab.control import lab_client_env  # noqa: E402
from slurm_gpu.placement.locality import NodeAlloc, check_job, parse_gres_conf  # noqa: E402
from slurm_gpu.slurm.records import parse_parsable  # noqa: E402

GPU_SHAPES = [("h100", 1), ("h100", 2), ("h100", 4), ("h100", 8), ("a100", 1), ("a100", 2), ("a100", 3), ("a100", 4)]
CORES_PER_TASK = {"h100": 4, "a100": 8}  # the GPU's share of its socket's cores, what users write for -c
PIN_NODE = {"h100": "h100n1", "a100": "a100n1"}  # --table only


def shape_lines(gtype: str, gpus: int, form: str) -> tuple[list[str], str]:
    """(#SBATCH options, launcher line) of a job as users write it. ``form``: ``torchrun`` (one task,
    no CPU count), ``torchrun-cN`` (one task, ``-c N``), ``srun`` (one task per GPU, ``-c`` the share),
    ``srun-cN`` (one task per GPU, ``-c N``) or ``ntasks-cN`` (``--ntasks`` instead of ``--ntasks-per-node``)."""
    opts = [f"--gres=gpu:{gtype}:{gpus}"]
    if form.startswith(("srun", "ntasks")):
        cpus = int(form.rpartition("-c")[2]) if "-c" in form else CORES_PER_TASK[gtype]
        opts += [f"--ntasks{'' if form.startswith('ntasks') else '-per-node'}={gpus}", f"--cpus-per-task={cpus}"]
        return opts, "srun bash -c 'sleep $GPUSUB_BENCH_SLEEP'"
    if form.startswith("torchrun-c"):
        opts.append(f"--cpus-per-task={form[len('torchrun-c'):]}")
    return opts, f"torchrun --standalone --nproc_per_node={gpus} train.py"


def default_form_cpus(gtype: str, gpus: int) -> int:
    return min(CORES_PER_TASK[gtype] * gpus, 32)


SHAPES = [(t, n, f) for t, n in GPU_SHAPES
          for f in ("torchrun", f"torchrun-c{default_form_cpus(t, n)}", "srun")] + [
    ("h100", 8, "torchrun-c8"), ("a100", 4, "torchrun-c8"),  # one task, few CPUs, GPUs on two sockets
    ("h100", 4, "srun-c2"), ("h100", 8, "srun-c2"), ("a100", 4, "srun-c2"),  # tasks of few CPUs (issue 5)
    ("h100", 8, "ntasks-c2"), ("h100", 4, "ntasks-c2"), ("a100", 3, "ntasks-c8")]  # --ntasks, no per-node count


def script_text(gtype: str, gpus: int, form: str, sleep: int) -> str:
    opts, launcher = shape_lines(gtype, gpus, form)
    head = "".join(f"#SBATCH {o}\n" for o in opts)
    return ("#!/bin/bash\n" + head + f"export GPUSUB_BENCH_SLEEP={sleep}\n"
            "# the lab has no torchrun: a stand-in that runs as long as the job's work\n"
            "torchrun() { sleep \"$GPUSUB_BENCH_SLEEP\"; }\n" + launcher + "\n")


def lab_env() -> dict[str, str]:
    env = lab_client_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure an ordinary install (byte-code cached)
    return env


def run(argv: list[str], env: dict[str, str], cwd: str, timeout_s: float = 30, check: bool = True) -> str:
    """Every Slurm call (and gpusub's) through the project's one runner, under a timeout."""
    return run_slurm(argv, env=env, cwd=cwd, timeout_s=timeout_s, check=check).stdout


def sbatch(argv: list[str], env: dict[str, str], cwd: str) -> int:
    result = parse_parsable(run(["sbatch", "--parsable", *argv], env, cwd))
    if result is None:
        raise RuntimeError(f"sbatch printed no job id for {argv}")
    return result.job_id


def submit_gpu(way: str, text: str, name: str, options: list[str], env: dict[str, str], work: str) -> int:
    """The same script and options, through plain sbatch or gpusub."""
    script = os.path.join(work, name)
    with open(script, "w") as fh:
        fh.write(text)
    os.chmod(script, 0o755)
    if way == "plain":
        return sbatch([*options, script], env, work)
    gpusub = os.path.join(os.path.dirname(sys.executable), "gpusub")
    return int(json.loads(run([gpusub, "--json", *options, script], env, work))["job_id"])


def allocation(job: int, env: dict[str, str]) -> list[NodeAlloc]:
    """The job's per-node allocations (the one job reader: squeue's JSON, docs/records.md)."""
    return show_job(env["SLURM_CONF"], job)[1]


def rule(allocs: list[NodeAlloc], gres: dict) -> list[str]:
    """The locality rule at one core per GPU (see the module docstring)."""
    return check_job(allocs, gres, cpus_per_gpu=1)


# ---- the mixed stream ------------------------------------------------------------------------

COMMON = ["-p", "batch", "-t", "2", "--mem=8G"]


def stream(n_jobs: int, seed: int) -> list[dict]:
    """Two CPU-only jobs first, then about one CPU-only job per two GPU jobs; CPU jobs take 6-14 cores
    (the scheduler puts them on socket 0 first), durations 8-20 s; each GPU job in one of the three forms."""
    rng = random.Random(seed)
    jobs = []
    for i in range(n_jobs):
        if i % 3 == 2 or i < 2:
            jobs.append({"kind": "cpu", "cpus": rng.choice([6, 10, 12, 14]), "sleep": rng.randint(8, 20)})
        else:
            gtype, count = rng.choice(GPU_SHAPES)
            form = rng.choice(["torchrun", f"torchrun-c{default_form_cpus(gtype, count)}", "srun"])
            jobs.append({"kind": "gpu", "type": gtype, "gpus": count, "form": form, "sleep": rng.randint(8, 20)})
    return jobs


def label(job: dict) -> str:
    return f"{job['type']}x{job['gpus']}/{job['form']}" if job["kind"] == "gpu" else f"cpu{job['cpus']}"


def one_pass(way: str, jobs: list[dict], env: dict[str, str], gres: dict, timeout_s: float) -> dict:
    work = tempfile.mkdtemp(prefix=f"p4-{way}-", dir=os.environ.get("TMPDIR", "/tmp"))
    start = time.monotonic()
    ids: dict[int, dict] = {}
    for k, job in enumerate(jobs):
        if job["kind"] == "cpu":
            ids[sbatch([*COMMON, "-n1", f"-c{job['cpus']}", "--wrap", f"sleep {job['sleep']}"], env, work)] = job
        else:
            text = script_text(job["type"], job["gpus"], job["form"], job["sleep"])
            ids[submit_gpu(way, text, f"job{k}.sh", COMMON, env, work)] = job
    submit_s = time.monotonic() - start  # all jobs submitted; starts are seen from here on
    order = {j: k for k, j in enumerate(ids)}  # job id -> position in the stream
    gpu_ids = {j for j, job in ids.items() if job["kind"] == "gpu"}
    started: dict[int, float] = {}
    verdict: dict[int, list[str]] = {}
    while len(started) < len(gpu_ids) and time.monotonic() - start < timeout_s:
        out = run(["squeue", "-h", "-t", "RUNNING", "-o", "%i"], env, work)
        running = {int(x) for x in out.split() if x.isdigit()}
        for j in sorted((running & gpu_ids) - set(started)):
            allocs = allocation(j, env)
            started[j] = time.monotonic() - start
            verdict[j] = rule(allocs, gres)
        time.sleep(0.5)
    waiting = {}
    for j in sorted(gpu_ids - set(started)):
        reason = run(["squeue", "-h", "-j", str(j), "-o", "%T %r"], env, work, check=False).strip()
        waiting[j] = f"{label(ids[j])}: {reason or 'gone'}"
    run(["scancel", *map(str, ids)], env, work, check=False)
    gpus = sum(ids[j]["gpus"] for j in started)
    span_s = max(started.values()) if started else float("nan")
    ok = sum(1 for j in started if not verdict[j])
    bad = {j: f"{label(ids[j])}: {verdict[j][0]}" for j in started if verdict[j]}
    return {"way": way, "gpu_jobs": len(gpu_ids), "started": len(started), "ok": ok, "gpus": gpus,
            "span_s": span_s, "gpus_per_min": gpus / (span_s / 60) if started else 0.0, "bad": bad,
            "waiting": waiting, "submit_s": submit_s, "start_by_index": {order[j]: t for j, t in started.items()}}


def wait_idle(env: dict[str, str], timeout_s: float = 60, nodes: str | None = None) -> bool:
    """Wait until no job is in the queue (on ``nodes`` when given); False when others' jobs stay."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        argv = ["squeue", "-h", "-o", "%i"] + (["-w", nodes] if nodes else [])
        if not run(argv, env, "/").split():
            return True
        time.sleep(1)
    return False


def bench(args: argparse.Namespace, env: dict[str, str], gres: dict) -> int:
    jobs = stream(args.jobs, args.seed)
    print(f"stream ({len(jobs)} jobs, seed {args.seed}, options {' '.join(COMMON)} both ways): "
          + ", ".join(label(j) for j in jobs))
    results = []
    for way in ("plain", "gpusub"):
        if not wait_idle(env):
            print(f"  note: other jobs still queued before the {way} pass: {run(['squeue', '-h'], env, '/')}")
        results.append(one_pass(way, jobs, env, gres, args.timeout))
    print(f"\n{'way':8} {'GPU jobs':>9} {'started':>8} {'locality ok':>12} {'share':>7} {'GPUs':>5} "
          f"{'span s':>7} {'GPUs/min':>9} {'submit s':>9}")
    for r in results:
        share = r["ok"] / r["started"] if r["started"] else 0.0
        print(f"{r['way']:8} {r['gpu_jobs']:9d} {r['started']:8d} {r['ok']:12d} {share:7.0%} {r['gpus']:5d} "
              f"{r['span_s']:7.1f} {r['gpus_per_min']:9.1f} {r['submit_s']:9.1f}")
    plain, ours = results
    ratio = ours["gpus_per_min"] / plain["gpus_per_min"] if plain["gpus_per_min"] else float("nan")
    print(f"\nallocation rate gpusub/plain = {ratio:.2f}x (goal >= 0.98x); "
          f"locality plain {plain['ok']}/{plain['started']}, gpusub {ours['ok']}/{ours['started']} (goal 100%)")
    for r in results:
        for j, why in r["bad"].items():
            print(f"  {r['way']} job {j} fails the rule: {why}")
        for j, why in r["waiting"].items():
            print(f"  {r['way']} job {j} not started within {args.timeout:g} s: {why}")
    print("\nGPU job start (s after the first submission), in stream order:")
    for k, job in enumerate(jobs):
        if job["kind"] == "gpu":
            t = [r["start_by_index"].get(k) for r in results]
            cells = [f"{x:6.1f}" if x is not None else "     -" for x in t]
            diff = f"{t[1] - t[0]:+6.1f}" if None not in t else ""
            print(f"  {k:2d} {label(job):22} plain {cells[0]}  gpusub {cells[1]}  {diff}")
    if any(r["waiting"] for r in results):
        print("  (a pass that did not start every GPU job: its GPUs/min counts only the started ones)")
    return 0


# ---- the placement table ---------------------------------------------------------------------

def measure(way: str, gtype: str, gpus: int, form: str, busy: bool, env: dict[str, str], gres: dict,
            start_timeout: float) -> dict:
    node = PIN_NODE[gtype]
    work = tempfile.mkdtemp(prefix="p4-table-", dir=os.environ.get("TMPDIR", "/tmp"))
    row = {"shape": f"{gtype}x{gpus} {form}", "way": way, "busy": busy, "node": node}
    if not wait_idle(env, 60, node):
        row["note"] = "node shared with other jobs"
    ids = []
    try:
        if busy:
            blocker = sbatch(["-w", node, "-p", "batch", "-n1", "-c8", "--mem=1G", "-t", "2", "--wrap", "sleep 60"],
                             env, work)
            ids.append(blocker)
            for _ in range(40):
                allocs = allocation(blocker, env)
                if allocs:
                    row["blocker"] = ",".join(map(str, sorted(allocs[0].cpu_ids)))
                    break
                time.sleep(0.25)
        text = script_text(gtype, gpus, form, 60)
        ids.append(submit_gpu(way, text, "job.sh", ["-w", node, "-t", "10"], env, work))
        end = time.monotonic() + start_timeout
        while time.monotonic() < end:
            allocs = allocation(ids[-1], env)
            if allocs:
                a = allocs[0]
                row.update(started=True, cpus=_ranges(a.cpu_ids), gpus=_ranges(a.gpu_idx),
                           problems=rule(allocs, gres))
                others = set(run(["squeue", "-h", "-t", "RUNNING", "-w", node, "-o", "%i"], env, work).split())
                if others - {str(i) for i in ids}:
                    row["note"] = "other jobs on the node: " + ",".join(sorted(others - {str(i) for i in ids}))
                break
            time.sleep(0.25)
        else:
            row.update(started=False, state=run(["squeue", "-h", "-j", str(ids[-1]), "-o", "%T (%r)"], env,
                                                work, check=False).strip())
            if not row["state"]:
                row["note"] = "job gone before it started (cancelled by someone else?)"
    finally:
        run(["scancel", *map(str, ids)], env, work, check=False)
    return row


def _ranges(values: frozenset[int]) -> str:
    out, run_start, prev = [], None, None
    for v in sorted(values) + [None]:
        if run_start is not None and (v is None or v != prev + 1):
            out.append(str(run_start) if prev == run_start else f"{run_start}-{prev}")
            run_start = None
        if v is not None and run_start is None:
            run_start = v
        prev = v
    return ",".join(out)


def table(args: argparse.Namespace, env: dict[str, str], gres: dict) -> int:
    version = run(["sbatch", "--version"], env, "/").strip()
    print(f"{version}; every job pinned with -w to {', '.join(sorted(set(PIN_NODE.values())))}, -t 10; "
          "busy = a CPU-only job (-n1 -c8) started on the node first")
    print("| shape | node | way | CPU_IDs | GPU IDX | every GPU has a local core | started |")
    print("|---|---|---|---|---|---|---|")
    types = set(args.types.split(","))
    for gtype, gpus, form in SHAPES:
        if gtype not in types or (args.only and f"{gtype}x{gpus}/{form}" not in args.only.split(",")):
            continue
        for busy in (False, True):
            for way in ("plain", "gpusub"):
                for _attempt in range(3):  # again when others' jobs shared the node or cancelled ours
                    r = measure(way, gtype, gpus, form, busy, env, gres, args.start_timeout)
                    if not r.get("note") and (r["started"] or r["state"]):
                        break
                state = "yes" if r["started"] else f"no: {r['state']}"
                loc = ("yes" if not r["problems"] else "no (" + "; ".join(r["problems"]) + ")") if r["started"] else "-"
                extra = f" [{r['note']}]" if r.get("note") else ""
                node = r["node"] + (f", cores {r.get('blocker', '?')} busy" if busy else " idle")
                print(f"| {r['shape']} | {node} | {way} | {r.get('cpus', '-')} | {r.get('gpus', '-')} | {loc} | "
                      f"{state}{extra} |", flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=24)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=140, help="seconds per pass")
    ap.add_argument("--table", action="store_true", help="measure the placement table instead")
    ap.add_argument("--types", default="h100,a100", help="--table: GPU types to measure")
    ap.add_argument("--only", default="", help="--table: only these shapes (h100x8/torchrun,...)")
    ap.add_argument("--start-timeout", type=float, default=16, help="--table: seconds a job may take to start")
    args = ap.parse_args()
    env = lab_env()
    with open(os.path.join(os.path.dirname(env["SLURM_CONF"]), "gres.conf")) as fh:
        gres = parse_gres_conf(fh.read())
    return table(args, env, gres) if args.table else bench(args, env, gres)


if __name__ == "__main__":
    sys.exit(main())
