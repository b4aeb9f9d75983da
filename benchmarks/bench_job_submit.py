# SPDX-License-Identifier: Apache-2.0
"""Benchmark P2: the cost of the compiled job_submit.lua plugin, in the lab and per Lua call.

1. Throughput. Two private labs side by side (never the shared /tmp/slurm-gpu-lab): one running the lab
   policy compiled into job_submit.lua (``lab up --job-submit``: JobSubmitPlugins=lua), one without a
   plugin (``lab up --no-job-submit``: JobSubmitPlugins unset), the same policy, config and machine. The
   lab user submits plain ``sbatch --hold --parsable --gpus=h100:1 -t 60 --wrap=true`` jobs (one the
   lab policy accepts) in batches that alternate between
   the two labs (the order flips every round, so drift and warm-up hit both alike); each batch is one
   process of the lab user running its sbatch calls back to back, and timing only them. After each
   round the benchmark cancels the jobs it submitted. Every submission must be accepted.
   Prints jobs/s each way and the ratio with/without (goal >= 0.95).
2. Lua microbenchmark. The largest example policy (examples/policies/*.yaml, by compiled script size,
   then file size) compiled with ``compile_policy`` and run by lupa's Lua 5.1 (the Lua slurmctld links)
   with a stub ``slurm`` table: N calls of ``slurm_job_submit`` on a fresh copy of a typical job_desc
   (the model of what Slurm hands the plugin, ``slurm_gpu.slurm.job_desc``), less the cost of the copy.
   Prints microseconds per call. A plain Lua table stands in for slurmctld's job_desc, whose fields
   are read through C getters: the figure is the engine's own cost.

Usage (as root):  .venv/bin/python benchmarks/bench_job_submit.py [--jobs 1000] [--batch 50] [--quick]
                  .venv/bin/python benchmarks/bench_job_submit.py --lua-only   (no lab, no root)
The two labs stay up with --keep-up (a later run then reuses them in 0.1 s); otherwise the benchmark
takes down the labs it used.
"""

from __future__ import annotations

import argparse
import glob
import os
import shlex
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_LAB = "/tmp/slurm-gpu-lab"
USER = "labuser"
SUBMIT = "--hold --parsable --gpus=h100:1 -t 60 --wrap=true"
TYPICAL_JOB = "sbatch --gpus=h100:2 -t 60 job.sh"

# Run by the lab user with the system python (standard library only): K sbatch calls back to back;
# prints the seconds each took and the job ids. Exits 1 at the first refused submission.
SUBMITTER = """
import subprocess, sys, time
conf, k, args = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
env = {"PATH": "/usr/bin:/bin", "SLURM_CONF": conf, "HOME": "/tmp", "LANG": "C.UTF-8"}
times, ids = [], []
for _ in range(k):
    t = time.perf_counter()
    r = subprocess.run(["sbatch", *args], env=env, capture_output=True, text=True, cwd="/tmp")
    times.append(time.perf_counter() - t)
    if r.returncode != 0:
        print("REFUSED " + r.stderr.strip().replace("\\n", " | "))
        sys.exit(1)
    ids.append(r.stdout.strip().split(";")[0])
print(" ".join(f"{x:.6f}" for x in times))
print(" ".join(ids))
"""

LUA_STUB = """
slurm = {SUCCESS = 0, ERROR = -1, FAILURE = -1, NO_VAL = 4294967294, NO_VAL16 = 65534,
         NO_VAL64 = 18446744073709551614, INFINITE = 4294967295, INFINITE16 = 65535,
         ESLURM_INVALID_GRES = 2072, ESLURM_INVALID_PARTITION_NAME = 2000, ESLURM_INVALID_QOS = 2019,
         ESLURM_INVALID_TIME_LIMIT = 2051, ESLURM_INVALID_ACCOUNT = 2045}
for _, name in ipairs({"log_info", "log_verbose", "log_debug", "log_debug2", "log_debug3", "log_debug4",
                       "log_debug5", "log_error", "log_user", "error"}) do
  slurm[name] = function() end
end
"""

LUA_LOOP = """
return function(submit, template, parts, n, call)
  local clock, copy = os.clock, function(t) local c = {} for k, v in pairs(t) do c[k] = v end return c end
  local sink = 0
  local t0 = clock()
  for _ = 1, n do
    local job = copy(template)
    if call then sink = sink + (submit(job, parts, 1000) or 0) else sink = sink + (job.min_nodes and 1 or 0) end
  end
  return clock() - t0, sink
end
"""


# ----------------------------------------------------------------------------------- Lua microbenchmark
def largest_policy() -> tuple[str, str]:
    """(path, compiled Lua) of the example policy whose compiled script is largest (then its file)."""
    from slurm_gpu.emit.job_submit import compile_policy
    from slurm_gpu.policy import load_policy

    best = None
    for path in sorted(glob.glob(os.path.join(REPO, "examples", "policies", "*.yaml"))):
        text = compile_policy(load_policy(path))
        key = (len(text), os.path.getsize(path))
        if best is None or key > best[0]:
            best = (key, path, text)
    if best is None:
        raise SystemExit("bench_job_submit: no examples/policies/*.yaml")
    return best[1], best[2]


def lua_microbench(calls: int, job: str, version: tuple[int, int, int]) -> None:
    from lupa import lua51

    from slurm_gpu.lab.config import version_text
    from slurm_gpu.policy import load_policy
    from slurm_gpu.slurm.job_desc import job_desc_for

    path, script = largest_policy()
    policy = load_policy(path)
    desc = {k: v for k, v in job_desc_for(shlex.split(job), version, "#!/bin/bash\ntrue\n").items() if v is not None}
    lua = lua51.LuaRuntime(unpack_returned_tuples=True)
    lua.execute(LUA_STUB)
    loaded = lua.execute(script)  # the chunk's own return value, as slurmctld checks it on load
    if loaded not in (0, None):
        raise SystemExit(f"bench_job_submit: {os.path.basename(path)}: the script returned {loaded} on load")
    submit = lua.globals().slurm_job_submit
    template = lua.table_from(desc)
    parts = lua.table_from({i + 1: lua.table_from({"name": p.name}) for i, p in enumerate(policy.partitions)})
    loop = lua.execute(LUA_LOOP)
    rc = submit(lua.table_from(desc), parts, 1000)
    loop(submit, template, parts, min(calls, 1000), True)  # warm-up
    base, _ = loop(submit, template, parts, calls, False)
    total, _ = loop(submit, template, parts, calls, True)
    per_call = max(total - base, 0.0) / calls * 1e6
    print(f"\nLua microbenchmark: {os.path.relpath(path, REPO)} compiled ({len(script):,} bytes of Lua), "
          f"lupa {lua.lua_version[0]}.{lua.lua_version[1]}")
    print(f"  job_desc of `{job}` (Slurm {version_text(version)} model), {len(desc)} fields; "
          f"slurm_job_submit returns {rc}")
    print(f"  {calls:,} calls: {per_call:.2f} us per call "
          f"(loop {total / calls * 1e6:.2f} us, of which copying the table {base / calls * 1e6:.2f} us)")


# ----------------------------------------------------------------------------------- lab throughput
def lab_up(lab_dir: str, port_base: int, job_submit: bool, policy: str | None, script: str | None = None) -> str:
    if os.path.realpath(lab_dir) == SHARED_LAB:
        raise SystemExit(f"bench_job_submit: refusing to use the shared lab {SHARED_LAB}")
    env = dict(os.environ, SLURM_GPU_LAB_DIR=lab_dir, SLURM_GPU_LAB_PORT_BASE=str(port_base))
    argv = [sys.executable, "-m", "slurm_gpu.cli.main", "lab", "up",
            "--job-submit" if job_submit else "--no-job-submit", *(["--policy", policy] if policy else []),
            *(["--job-submit-lua", script] if script and job_submit else [])]
    t = time.monotonic()
    r = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"bench_job_submit: lab up {lab_dir} failed:\n{r.stderr.strip()[-2000:]}")
    conf = os.path.join(lab_dir, "etc", "slurm.conf")
    plugin = scontrol_config(conf).get("JobSubmitPlugins", "")
    want = "lua" if job_submit else "(null)"
    if plugin != want:
        raise SystemExit(f"bench_job_submit: {lab_dir}: JobSubmitPlugins={plugin!r}, expected {want!r}")
    print(f"  {lab_dir} (ports from {port_base}): JobSubmitPlugins={plugin} ({time.monotonic() - t:.1f} s to ready)")
    return conf


def lab_down(lab_dir: str, port_base: int) -> None:
    env = dict(os.environ, SLURM_GPU_LAB_DIR=lab_dir, SLURM_GPU_LAB_PORT_BASE=str(port_base))
    subprocess.run([sys.executable, "-m", "slurm_gpu.cli.main", "lab", "down"], env=env, cwd=REPO,
                   capture_output=True, text=True, timeout=300)


def scontrol_config(conf: str) -> dict[str, str]:
    out = subprocess.run(["scontrol", "show", "config"], env=dict(os.environ, SLURM_CONF=conf),
                         capture_output=True, text=True, timeout=30).stdout
    return {k.strip(): v.strip() for k, _, v in (ln.partition("=") for ln in out.splitlines()) if v}


def batch(conf: str, k: int, submit_args: list[str]) -> tuple[list[float], list[str]]:
    """K submissions by the lab user to the lab of ``conf``: per-call seconds and the job ids."""
    r = subprocess.run(["runuser", "-u", USER, "--", "/usr/bin/python3", "-c", SUBMITTER, conf, str(k),
                        *submit_args], capture_output=True, text=True, timeout=60 + 10 * k, cwd="/")
    lines = r.stdout.splitlines()
    if r.returncode != 0 or len(lines) != 2:
        raise SystemExit(f"bench_job_submit: submissions to {conf} failed: {(r.stdout + r.stderr).strip()[-600:]}")
    return [float(x) for x in lines[0].split()], lines[1].split()


def jobs_in_memory(conf: str) -> int:
    """Job records slurmctld holds (finished ones stay MinJobAge=600 s): job_submit/lua on 21.08-23.02
    rebuilds its ``slurm.jobs`` table from all of them before a call whenever any job changed."""
    out = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i"], env=dict(os.environ, SLURM_CONF=conf),
                         capture_output=True, text=True, timeout=60).stdout
    return len(out.split())


def cancel(conf: str, ids: list[str]) -> None:
    if ids:
        subprocess.run(["scancel", *ids], env=dict(os.environ, SLURM_CONF=conf), capture_output=True, timeout=60)


def throughput(args: argparse.Namespace) -> None:
    submit_args = shlex.split(args.submit)
    first, second = ("lab A", "lab B") if args.control else ("with plugin", "without plugin")
    labs = {first: (args.lab_dir, args.port_base, not args.control),
            second: (args.lab_dir + "n", args.port_base + 1000, False)}
    print("bringing up two labs (the shared one is never touched):")
    confs = {name: lab_up(d, p, js, args.policy, args.job_submit_lua) for name, (d, p, js) in labs.items()}
    try:
        for conf in confs.values():  # warm-up: page cache, sbatch's first start, slurmctld's first job
            _, ids = batch(conf, min(5, args.batch), submit_args)
            cancel(conf, ids)
        times: dict[str, list[float]] = {name: [] for name in confs}
        wall: dict[str, float] = {name: 0.0 for name in confs}
        rounds = max(1, args.jobs // args.batch)
        order = list(confs)
        for rnd in range(rounds):
            for name in (order if rnd % 2 == 0 else order[::-1]):
                t, ids = batch(confs[name], args.batch, submit_args)
                times[name] += t
                wall[name] += sum(t)
                cancel(confs[name], ids)
        n = rounds * args.batch
        print(f"\nP2: {n} plain submissions each way (`sbatch {args.submit}` as {USER}), "
              f"{rounds} alternating rounds of {args.batch}")
        rate = {}
        for name in confs:
            rate[name] = n / wall[name]
            med, p95 = statistics.median(times[name]), sorted(times[name])[int(0.95 * (n - 1))]
            print(f"  {name:15} {rate[name]:7.1f} jobs/s   (median call {med * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms)")
        held = ", ".join(f"{name} {jobs_in_memory(conf)}" for name, conf in confs.items())
        print(f"  job records in slurmctld at the end: {held}")
        ratio = rate[first] / rate[second]
        if args.control:
            print(f"\nA/A control (no plugin in either lab): ratio = {ratio:.3f}   (noise; ~1.0)")
        else:
            what = f"`{args.job_submit_lua}`" if args.job_submit_lua else "the compiled policy"
            print(f"\nthroughput ratio with/without plugin ({what}) = {ratio:.3f}   (goal >= 0.95)")
    finally:
        if not args.keep_up:
            for d, p, _ in labs.values():
                lab_down(d, p)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000, help="submissions each way [1000]")
    ap.add_argument("--batch", type=int, default=50, help="submissions per batch [50]")
    ap.add_argument("--quick", action="store_true", help="100 submissions each way, 2,000 Lua calls")
    ap.add_argument("--calls", type=int, default=20000, help="Lua calls in the microbenchmark [20000]")
    ap.add_argument("--job", default=TYPICAL_JOB, help=f"command line of the microbenchmark's job [{TYPICAL_JOB}]")
    ap.add_argument("--submit", default=SUBMIT, help=f"sbatch arguments of each lab submission [{SUBMIT}]")
    ap.add_argument("--policy", default=None, help="policy of both labs [the lab default]")
    ap.add_argument("--lab-dir", default="/tmp/slurm-gpu-lab-p2", help="the plugin lab; the other is this + 'n'")
    ap.add_argument("--port-base", type=int, default=19917, help="the plugin lab's ports; the other's +1000")
    ap.add_argument("--keep-up", action="store_true", help="leave both labs up")
    ap.add_argument("--job-submit-lua", default=None,
                    help="run this script in the plugin lab instead of the compiled policy (an accept-all "
                         "script gives the plugin's fixed cost)")
    ap.add_argument("--control", action="store_true",
                    help="A/A check: run the first lab without the plugin too (the ratio then shows the noise)")
    ap.add_argument("--lua-only", action="store_true", help="only the Lua microbenchmark (no lab)")
    args = ap.parse_args()
    if args.quick:
        args.jobs, args.batch, args.calls = 100, 25, 2000
    if args.jobs < 1 or args.batch < 1 or args.calls < 1:
        ap.error("--jobs, --batch and --calls must be positive")
    if not args.lua_only:
        if os.geteuid() != 0:
            ap.error("the lab part must run as root (it starts two labs); --lua-only needs no lab")
        throughput(args)
    from slurm_gpu.errors import SlurmGpuError
    from slurm_gpu.lab.control import slurm_version

    try:
        version = slurm_version()
    except SlurmGpuError:  # no Slurm here: model the lab's own release
        version = (22, 5, 8)
    lua_microbench(args.calls, args.job, version)
    return 0


if __name__ == "__main__":
    sys.exit(main())
