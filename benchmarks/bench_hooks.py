# SPDX-License-Identifier: Apache-2.0
"""Benchmark P3: what slurm-gpu's node hooks (Prolog, Epilog, TaskProlog) add to a tiny GPU job.

Private labs side by side, as root: ``/tmp/slurm-gpu-lab-p3h`` (ports from 40817) with the hooks
installed as ``lab up`` does by default, as ``slurm-gpu admin install`` advises (the hook agents, no
PrologFlags; stand-in NVML state on h100n1, so the hooks do their full GPU work: NVML, accounting, job
map, health, stats), ``/tmp/slurm-gpu-lab-p3n`` (41817) without hooks, and ``/tmp/slurm-gpu-lab-p3e``
(42817) whose Prolog, Epilog and TaskProlog are ``/bin/true``: Slurm's own cost of having hooks at all.
``--with-alloc`` adds ours and ``/bin/true`` with ``PrologFlags=Alloc`` (43817, 44817). The lab user
runs ``srun -w h100n1 --gpus=h100:1 -t 5 true`` one after another, ``--rounds`` rounds of
``--per-round`` jobs in each lab, alternating (the order flips every round); the time of each srun is
one job's turnaround, and since the node takes the next job only when the previous job's Epilog is
done, the Epilog counts too. Then each entry point is profiled directly (fresh processes, in its own
process and through the agent), to say what bounds the cost. Prints the median added turnaround per
job; the goal is 100 ms or less.

    python benchmarks/bench_hooks.py [--rounds 10] [--per-round 10] [--with-alloc] [--keep-up]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from slurm_gpu.lab import clients  # noqa: E402
from slurm_gpu.lab.config import LabPaths  # noqa: E402
from slurm_gpu.lab.control import Lab, default_hooks, default_policy_path, policy_spec_factory  # noqa: E402
from slurm_gpu.lab.nodehooks import agent_env  # noqa: E402

LABS = {"hooks": ("/tmp/slurm-gpu-lab-p3h", "40817", "ours"), "plain": ("/tmp/slurm-gpu-lab-p3n", "41817", ""),
        "empty": ("/tmp/slurm-gpu-lab-p3e", "42817", "/bin/true")}  # Slurm's own cost of having hooks at all
ALLOC_LABS = {"hooks+Alloc": ("/tmp/slurm-gpu-lab-p3ha", "43817", "ours"),
              "empty+Alloc": ("/tmp/slurm-gpu-lab-p3ea", "44817", "/bin/true")}
JOB = ["srun", "-w", "h100n1", "--gpus=h100:1", "-t", "5", "true"]


def standin_state():
    spec = importlib.util.spec_from_file_location("p3_state", REPO / "tests" / "nvml_standin" / "state.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def up(name: str) -> Lab:
    lab_dir, port, hooks = {**LABS, **ALLOC_LABS}[name]
    os.environ.update(SLURM_GPU_LAB_DIR=lab_dir, SLURM_GPU_LAB_PORT_BASE=port,
                      SLURM_GPU_LAB_PROLOG_ALLOC="1" if name in ALLOC_LABS else "0")
    lab = Lab(LabPaths(lab_dir), say=lambda m: print(f"[{name}] {m}", file=sys.stderr))
    policy = os.path.abspath(default_policy_path())
    if hooks == "/bin/true":
        wired = default_hooks(prolog=hooks, epilog=hooks, task_prolog=hooks, node_hooks=False)
    else:
        wired = default_hooks(node_hooks=hooks == "ours")
    lab.up(policy_spec_factory(policy), hooks=wired, restart=False, policy_path=policy)
    if hooks == "ours":
        st = standin_state()
        st.write(Path(lab_dir) / "nvml" / "h100n1.state", st.load_fixture("h100-8gpu"))
    return lab


def one_job(lab: Lab) -> float:
    t = time.monotonic()
    r = clients.run(JOB, lab.slurm_conf, user="labuser", timeout_s=60, cwd=lab.paths.jobs_dir)
    took = time.monotonic() - t
    if r.returncode != 0:
        raise SystemExit(f"bench_hooks: {' '.join(JOB)} failed in {lab.paths.lab_dir}: {r.stderr.strip()[:300]}")
    return took


def epilog_times(lab_dir: str) -> list[float]:
    """Epilog durations from the hook log: first to last line of each epilog process."""
    log = Path(lab_dir) / "node-hooks" / "log" / "node-hooks.log"
    spans: dict[str, list[float]] = {}
    if not log.exists():
        return []
    for line in log.read_text().splitlines():
        m = re.match(r"(\S+) slurm-gpu-epilog\[(\d+)\]", line)
        if m:
            t = time.mktime(time.strptime(m.group(1)[:19], "%Y-%m-%dT%H:%M:%S"))
            spans.setdefault(m.group(2), []).append(t)
    return [max(v) - min(v) for v in spans.values()]


def profile(lab_dir: str) -> None:
    """Each entry point, run directly like slurmd would (fresh process), 20 times: median ms."""
    pre = Path(lab_dir) / "node-hooks"
    base = {**agent_env(lab_dir, "h100n1"), "PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "999999", "SLURM_JOB_UID": "0",
            "SLURM_JOB_GID": "0", "SLURM_JOB_GPUS": "7", "CUDA_VISIBLE_DEVICES": "7",
            "SLURM_GPU_HOOKS_CONF": str(pre / "hooks.conf")}  # hooks.env as the node's shims source it
    agent = base.pop("SLURM_GPU_HOOKS_AGENT", "")
    py = sys.executable
    cases = [
        ("python -c pass (interpreter start)", [py, "-c", "pass"], base),
        ("python -c 'import pynvml'", [py, "-c", "import pynvml"], base),
        ("slurm-gpu-prolog, GPU job", [str(Path(py).parent / "slurm-gpu-prolog")], base),
        ("slurm-gpu-task-prolog", [str(Path(py).parent / "slurm-gpu-task-prolog")], base),
        ("slurm-gpu-epilog, GPU job", [str(Path(py).parent / "slurm-gpu-epilog")], base),
        ("slurm-gpu-prolog, CPU-only job", [str(Path(py).parent / "slurm-gpu-prolog")],
         {**base, "SLURM_JOB_GPUS": "", "CUDA_VISIBLE_DEVICES": ""}),
        ("prolog.sh shim + entry point, GPU job (through the agent)", ["/bin/sh", str(pre / "prolog.sh")], base),
        ("slurm-gpu-hook prolog, in its own process", [str(pre / "slurm-gpu-hook"), "prolog"], base),
        ("slurm-gpu-hook prolog, through the agent", [str(pre / "slurm-gpu-hook"), "prolog"],
         {**base, "SLURM_GPU_HOOKS_AGENT": agent}),
        ("slurm-gpu-hook epilog, in its own process", [str(pre / "slurm-gpu-hook"), "epilog"], base),
        ("slurm-gpu-hook epilog, through the agent", [str(pre / "slurm-gpu-hook"), "epilog"],
         {**base, "SLURM_GPU_HOOKS_AGENT": agent}),
    ]
    print("\nprofile (median of 20 fresh processes):")
    for what, argv, env in cases:
        times = []
        for _ in range(20):
            t = time.monotonic()
            subprocess.run(argv, env=env, capture_output=True, timeout=60, check=False)
            times.append(time.monotonic() - t)
            if "prolog" in argv[-1] and "task" not in argv[-1]:
                subprocess.run([str(Path(py).parent / "slurm-gpu-epilog")], env=env, capture_output=True, timeout=60,
                               check=False)
        print(f"  {statistics.median(times) * 1000:7.1f} ms  {what}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--per-round", type=int, default=10)
    ap.add_argument("--with-alloc", action="store_true",
                    help="also two labs with PrologFlags=Alloc (ours and /bin/true hooks): srun's poll for the Prolog")
    ap.add_argument("--keep-up", action="store_true", help="leave the labs up")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("bench_hooks: run as root (it starts private labs)", file=sys.stderr)
        return 2
    names = list(LABS) + (list(ALLOC_LABS) if args.with_alloc else [])
    labs = {name: up(name) for name in names}
    try:
        for lab in labs.values():
            one_job(lab)  # warm-up
        times: dict[str, list[float]] = {name: [] for name in names}
        order = list(names)
        for _ in range(args.rounds):
            for name in order:
                times[name] += [one_job(labs[name]) for _ in range(args.per_round)]
            order.reverse()
        med = {name: statistics.median(v) for name, v in times.items()}
        print(f"P3: {len(times['hooks'])} jobs with the node hooks (as `slurm-gpu admin install` advises: the agent, "
              f"no PrologFlags), {len(times['plain'])} without, one after another on one node ({' '.join(JOB)})")
        for name in names:
            v = sorted(times[name])
            print(f"  {name:12s} median {med[name] * 1000:7.1f} ms  p10 {v[len(v) // 10] * 1000:7.1f}  "
                  f"p90 {v[len(v) * 9 // 10] * 1000:7.1f}")
        added = (med["hooks"] - med["plain"]) * 1000
        slurm_own = (med["empty"] - med["plain"]) * 1000
        verdict = "met" if added <= 100 else "NOT met"
        print(f"  median added turnaround per job: {added:.1f} ms (goal <= 100 ms: {verdict})")
        print(f"    of which Slurm's own cost of a Prolog/Epilog/TaskProlog at all (/bin/true hooks): "
              f"{slurm_own:.1f} ms; slurm-gpu's hooks themselves: {added - slurm_own:.1f} ms")
        if args.with_alloc:
            print(f"  with PrologFlags=Alloc: added {(med['hooks+Alloc'] - med['plain']) * 1000:.1f} ms, of which "
                  f"/bin/true hooks {(med['empty+Alloc'] - med['plain']) * 1000:.1f} ms (srun polls for the Prolog's "
                  "end every 0.1 s x i)")
        ep = epilog_times(LABS["hooks"][0])
        if ep:
            print(f"  Epilog (from the hook log; whole seconds): median {statistics.median(ep):.0f} s over {len(ep)} "
                  "runs")
        profile(LABS["hooks"][0])
    finally:
        if not args.keep_up:
            for lab in labs.values():
                lab.down(quiet=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
