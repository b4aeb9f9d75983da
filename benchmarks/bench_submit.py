# SPDX-License-Identifier: Apache-2.0
"""Benchmark P1: the cost of submitting one 1-GPU job, four ways, in the lab.

20 alternating rounds (default) of the same job, each way a fresh process as a user would run it:
  gpusub    this checkout's ``gpusub --gres=gpu:h100:1 job.sh``: every call parses, classifies, plans,
            renders and submits afresh (cached per user: the parsed policy, the sbatch version and
            help text, node layouts; never a decision or a job)
  sbatch    ``sbatch --parsable --gres=gpu:h100:1 job.sh``
  floor     ``python -c pass`` with gpusub's interpreter (the cost of a bare Python start)
  submitit  submitit's AutoExecutor submitting the same command (``bash job.sh``), in a fresh interpreter
Jobs are submitted held (``--hold``; submitit: ``slurm_additional_parameters={"hold": True}``) and
cancelled after each round.
Prints each median, (gpusub - sbatch) / floor (a measurement: issue 23 retired its goal) and
gpusub / submitit (goal <= 0.7), then
gpusub's import profile (``python -X importtime``: the slowest top-level imports and the largest own times).

Byte-code: measured as an installed package runs, with ``.pyc`` files. ``make venv`` compiles the
checkout (``python -m compileall slurm_gpu``: an editable install has no byte-code of its own), and the
runs here drop PYTHONDONTWRITEBYTECODE so that the warm-up writes any that is missing. Without
byte-code every gpusub run also compiles its ~40 modules (about 40 ms more on the lab machine).

submitit is a benchmark-only dependency: the setup step pip-installs it into this interpreter's
environment when it is missing (``--no-install`` skips the submitit way instead).
Usage (lab up, as root):  .venv/bin/python benchmarks/bench_submit.py [--rounds 20] [--gpu-type h100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from slurm_gpu.adapters.slurm import run_slurm  # noqa: E402
from slurm_gpu.lab.control import lab_client_env  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.dirname(sys.executable)

SUBMITIT = """
import sys, submitit
ex = submitit.AutoExecutor(folder=sys.argv[1], cluster="slurm")
ex.update_parameters(timeout_min=5, slurm_gres=sys.argv[2], slurm_additional_parameters={"hold": True})
job = ex.submit(submitit.helpers.CommandFunction(["bash", sys.argv[3]]))
print(job.job_id)
"""


def lab_env() -> dict[str, str]:
    env = lab_client_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure an ordinary install (byte-code cached)
    return env


def ensure_submitit(install: bool) -> bool:
    """Setup step: make ``import submitit`` work in this environment (pip, the ordinary client)."""
    if subprocess.run([sys.executable, "-c", "import submitit"], capture_output=True).returncode == 0:
        return True
    if not install:
        return False
    print("setup: pip install submitit (benchmark-only dependency)", flush=True)
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "submitit"], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"setup: pip install submitit failed: {r.stderr.strip().splitlines()[-1:]}")
        return False
    return True


def timed(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, str]:
    """The measured call itself: a bare subprocess, so the runner's own cost is not in the figures."""
    start = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=60)
    elapsed = time.perf_counter() - start
    if r.returncode != 0:
        raise RuntimeError(f"{argv[0]}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
    return elapsed, r.stdout.strip()


def job_id(text: str) -> str | None:
    last = text.splitlines()[-1] if text else ""
    head = last.split(";")[0].split("_")[0]
    return head if head.isdigit() else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--gpu-type", default="h100")
    ap.add_argument("--no-install", action="store_true", help="do not pip-install submitit")
    args = ap.parse_args()
    env = lab_env()
    have_submitit = ensure_submitit(not args.no_install)
    work = tempfile.mkdtemp(prefix="p1-")
    script = os.path.join(work, "job.sh")
    with open(script, "w") as fh:
        fh.write("#!/bin/bash\n#SBATCH --time=5\nsleep 1\n")
    os.chmod(script, 0o755)
    gres = f"gpu:{args.gpu_type}:1"
    ways = {
        "gpusub": [os.path.join(BIN, "gpusub"), "--parsable", "--hold", f"--gres={gres}", script],
        "sbatch": ["sbatch", "--parsable", "--hold", f"--gres={gres}", script],
        "floor": [sys.executable, "-c", "pass"],
    }
    if have_submitit:
        ways["submitit"] = [sys.executable, "-c", SUBMITIT, os.path.join(work, "submitit"), gres, script]
    times: dict[str, list[float]] = {w: [] for w in ways}
    for argv in ways.values():  # warm-up: byte-code, version and topology caches, page cache
        out = timed(argv, env, work)[1]
        if job_id(out):
            run_slurm(["scancel", job_id(out)], env=env, timeout_s=15)
    order = list(ways)
    for rnd in range(args.rounds):
        ids = []
        for way in (order if rnd % 2 == 0 else order[::-1]):  # alternate the order every round
            elapsed, out = timed(ways[way], env, work)
            times[way].append(elapsed)
            if way != "floor" and job_id(out):
                ids.append(job_id(out))
        if ids:
            run_slurm(["scancel", *ids], env=env, timeout_s=15)
    med = {w: statistics.median(t) * 1000 for w, t in times.items()}
    print(f"\nP1: {args.rounds} rounds, one {gres} job each way (medians, ms)")
    for w in ways:
        print(f"  {w:9} {med[w]:8.1f}   (min {min(times[w]) * 1000:.1f}, max {max(times[w]) * 1000:.1f})")
    own = (med["gpusub"] - med["sbatch"]) / med["floor"]
    print(f"\n(gpusub - sbatch) / floor = {own:.2f}   (a measurement; no goal since issue 23)")
    if "submitit" in med:
        print(f"gpusub / submitit        = {med['gpusub'] / med['submitit']:.2f}   "
              "(goal <= 0.7, issue 23)")
        print(f"(submitit - sbatch)/floor = {(med['submitit'] - med['sbatch']) / med['floor']:.2f}")
    prof = subprocess.run([sys.executable, "-X", "importtime", ways["gpusub"][0], *ways["gpusub"][1:]],
                          capture_output=True, text=True, env=env, cwd=work)
    rows = []
    for line in prof.stderr.splitlines():
        parts = line[len("import time:"):].split("|") if line.startswith("import time:") else []
        if len(parts) == 3 and parts[1].strip().isdigit():
            depth = len(parts[2]) - len(parts[2].lstrip())
            rows.append((int(parts[1]), depth, parts[2].strip(), int(parts[0])))
    if job_id(prof.stdout):
        run_slurm(["scancel", job_id(prof.stdout)], env=env, timeout_s=15)
    top = [(us, name) for us, depth, name, _ in sorted(rows, reverse=True) if depth <= 1][:12]
    total = sum(us for us, depth, _, _ in rows if depth <= 1)
    print(f"\ngpusub's imports: {total / 1000:.1f} ms in all (-X importtime, one run; its own figures run high)")
    print("slowest top-level imports (cumulative ms):")
    for us, name in top:
        print(f"  {us / 1000:6.1f}  {name.strip()}")
    jinja2 = "yes" if any(name == "jinja2" for _, _, name, _ in rows) else "no"
    print(f"largest own times, any depth (ms; jinja2 imported: {jinja2}):")
    for own, name in sorted(((own, name) for _, _, name, own in rows), reverse=True)[:12]:
        print(f"  {own / 1000:6.1f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
