# SPDX-License-Identifier: Apache-2.0
"""Benchmark P7 (issue 24): N trivial function jobs through slurm_gpu.api and through submitit, side by
side in one run in the lab.

Each side submits ``map_array(trivial, range(N))`` (one job array: the form a sweep takes in both) and
waits for every result. Printed per side: the time to submit all jobs, the time until every result is
back, and slurmctld's RPCs during the side's run, from ``sdiag`` deltas: by message type, and the
submitting user's own (sdiag's "by user" table: the client's calls, without the daemons' job-lifecycle
messages that every job costs either way). Then the ratios ours/submitit. The goals: user RPCs <= 0.2x
submitit's and time to all results <= 0.5x.

Run as the lab user (sdiag, the jobs and both folders are theirs), in a lab of your own:
    runuser -u labuser -- env SLURM_CONF=... GPUSUB_POLICY=... PATH=.venv/bin:$PATH HOME=/tmp/... \\
        .venv/bin/python benchmarks/bench_api.py --jobs 200 --folder /tmp/lab-x/jobs/bench
submitit is optional: without it (``pip install submitit``) its side is skipped with a line saying so.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

_TYPE = re.compile(r"^\s*([A-Z_0-9]+)\s+\(\s*\d+\)\s+count:(\d+)")
_USER = re.compile(r"^\s*(\S+)\s+\(\s*(\d+)\)\s+count:(\d+)")


def trivial(x: int) -> int:
    return x + 1


def sdiag() -> tuple[Counter[str], Counter[str]]:
    """(RPCs by message type, RPCs by user) so far."""
    text = subprocess.run(["sdiag"], capture_output=True, text=True, check=True, timeout=60).stdout
    by_type: Counter[str] = Counter()
    by_user: Counter[str] = Counter()
    section = ""
    for line in text.splitlines():
        if "by message type" in line:
            section = "type"
            continue
        if "by user" in line:
            section = "user"
            continue
        if section == "type" and (m := _TYPE.match(line)):
            by_type[m.group(1)] = int(m.group(2))
        elif section == "user" and (m := _USER.match(line)):
            by_user[m.group(1)] = int(m.group(3))
        elif line.strip() and not line.startswith(" ") and section:
            section = "" if "Pending RPC" in line else section
    return by_type, by_user


def delta(after: Counter[str], before: Counter[str]) -> Counter[str]:
    return Counter({k: after[k] - before.get(k, 0) for k in after if after[k] - before.get(k, 0) > 0})


def run_side(name: str, submit, n: int, user: str) -> dict[str, object]:
    t0, (ty0, us0) = time.monotonic(), sdiag()
    jobs, wait = submit(n)
    t1 = time.monotonic()
    results = wait(jobs)
    t2 = time.monotonic()
    ty1, us1 = sdiag()
    assert results == [trivial(x) for x in range(n)], f"{name}: results out of order or missing"
    return {"submit_s": t1 - t0, "results_s": t2 - t0, "types": delta(ty1, ty0), "user": delta(us1, us0)[user]}


def ours(folder: str):
    from slurm_gpu.api import Executor, wait_all

    ex = Executor(os.path.join(folder, "ours"))
    ex.update_parameters(timeout_min=5)

    def submit(n: int):
        return ex.map_array(trivial, range(n)), lambda jobs: (wait_all(jobs, progress=False),
                                                              [j.result() for j in jobs])[1]
    return submit, ex


def theirs(folder: str):
    import submitit

    ex = submitit.SlurmExecutor(os.path.join(folder, "submitit"))
    ex.update_parameters(time=5)

    def submit(n: int):
        return ex.map_array(trivial, range(n)), lambda jobs: [j.result() for j in jobs]
    return submit


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--folder", default=None)
    args = ap.parse_args()
    import pwd

    user = pwd.getpwuid(os.geteuid()).pw_name
    folder = args.folder or tempfile.mkdtemp(prefix="bench-api.")
    n = args.jobs
    print(f"P7: N={n} trivial function jobs (map_array), user {user}, folder {folder}")
    submit, ex = ours(folder)
    sides = {"slurm_gpu.api": run_side("slurm_gpu.api", submit, n, user)}
    print(f"  slurm_gpu.api poller calls: {dict(ex.poller.calls)}")
    try:
        import submitit  # noqa: F401
    except ImportError:
        print("  submitit: not installed in this environment (pip install submitit); its side is skipped")
    else:
        sides["submitit"] = run_side("submitit", theirs(folder), n, user)
    for name, s in sides.items():
        top = ", ".join(f"{k} {v}" for k, v in s["types"].most_common(6))
        print(f"  {name:14s} submit {s['submit_s']:7.2f} s  all results {s['results_s']:7.2f} s  "
              f"user RPCs {s['user']:6d}  all RPCs {sum(s['types'].values()):6d}  ({top})")
    if "submitit" in sides:
        a, b = sides["slurm_gpu.api"], sides["submitit"]
        print(f"  ratios ours/submitit: submit {a['submit_s'] / b['submit_s']:.2f}x, all results "
              f"{a['results_s'] / b['results_s']:.2f}x (goal <= 0.5x), user RPCs "
              f"{a['user'] / max(1, b['user']):.2f}x (goal <= 0.2x), all RPCs "
              f"{sum(a['types'].values()) / max(1, sum(b['types'].values())):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
