# SPDX-License-Identifier: Apache-2.0
"""Record what Slurm really hands job_submit.lua (run by hand, as root; not collected by pytest).

    .venv/bin/python tests/job_submit/capture.py [--lab-dir /tmp/slurm-gpu-lab-rec] [--port-base 18817]

Brings up a SECOND lab (its own SLURM_GPU_LAB_DIR and SLURM_GPU_LAB_PORT_BASE; the shared lab at
/tmp/slurm-gpu-lab is never touched) with ``job_submit/record.lua`` as its job_submit plugin, runs every
command line of :data:`CASES` as the lab user, with an empty environment, one at a time, and keeps the
lines the plugin wrote during each as ``tests/job_submit/fixtures/<slurm version>/cases.jsonl`` (one JSON
line per case: id, argv, script text, exit code, stderr tail and the recorded ``job_desc`` dumps; a
heterogeneous job gives one dump per component). Then it takes that lab down again. For Slurm 24.11 it
is run inside a Debian 13 root (tests/job_submit/capture_deb13.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
RECORD_LUA = REPO / "job_submit" / "record.lua"

SCRIPT = "#!/bin/bash\ntrue\n"
DIRECTIVE_SCRIPT = "#!/bin/bash\n#SBATCH --gpus-per-node=h100:2\n#SBATCH -t 30\n#SBATCH -J fromscript\ntrue\n"
SB = "sbatch --hold"
SA = "salloc --no-shell --immediate=10"
SR = "srun --immediate=10"

# (id, command line). "job.sh" is SCRIPT, "dir.sh" DIRECTIVE_SCRIPT; "update:<scontrol args>" submits a
# held `sbatch --hold --gpus=1 job.sh` and then runs `scontrol update JobId=<it> <args>` as the lab user.
CASES: list[tuple[str, str]] = [
    # --- GPU spellings (sbatch) ---
    ("gpus-n", f"{SB} --gpus=2 job.sh"),
    ("gpus-typed", f"{SB} --gpus=h100:2 job.sh"),
    ("gpus-short", f"{SB} -G 1 job.sh"),
    ("gpus-two-types", f"{SB} --gpus=h100:1,a100:1 job.sh"),
    ("gpus-gpu-prefix", f"{SB} --gpus=gpu:h100:1 job.sh"),
    ("gres-n", f"{SB} --gres=gpu:2 job.sh"),
    ("gres-typed", f"{SB} --gres=gpu:h100:2 job.sh"),
    ("gres-bare", f"{SB} --gres=gpu job.sh"),
    ("gres-type-only", f"{SB} --gres=gpu:h100 job.sh"),
    ("gres-mixed-mps", f"{SB} --gres=gpu:a100:1,mps:50 job.sh"),
    ("gres-shard", f"{SB} --gres=shard:2 job.sh"),
    ("gres-gpu-shard", f"{SB} --gres=gpu:2,shard:1 job.sh"),
    ("gres-mig", f"{SB} --gres=gpu:1g.10gb:1 job.sh"),
    ("gres-mig-prefixed", f"{SB} -p mig --gres=gpu:a100_1g.10gb:2 job.sh"),
    ("gpus-mig", f"{SB} --gpus=1g.10gb:1 job.sh"),
    ("gres-two-types", f"{SB} --gres=gpu:h100:1,gpu:a100:1 job.sh"),
    ("gres-none", f"{SB} --gres=none job.sh"),
    ("gres-slash-prefix", f"{SB} --gres=gres/gpu:2 job.sh"),
    ("gres-colon-prefix", f"{SB} --gres=gres:gpu:h100:1 job.sh"),
    ("gpn-n", f"{SB} --gpus-per-node=2 job.sh"),
    ("gpn-typed-N2", f"{SB} --gpus-per-node=h100:4 -N2 job.sh"),
    ("gpt-n", f"{SB} --gpus-per-task=1 -n2 job.sh"),
    ("gpt-typed", f"{SB} --gpus-per-task=h100:2 -n2 job.sh"),
    ("gpt-c4", f"{SB} -c4 --gpus-per-task=1 -n2 job.sh"),
    ("gpt-no-n", f"{SB} --gpus-per-task=1 job.sh"),
    ("gps-n", f"{SB} --gpus-per-socket=1 --sockets-per-node=2 job.sh"),
    ("gps-typed", f"{SB} --gpus-per-socket=h100:2 --sockets-per-node=2 job.sh"),
    ("cpus-per-gpu", f"{SB} --gpus=4 --cpus-per-gpu=8 job.sh"),
    ("mem-per-gpu-G", f"{SB} --gpus=2 --mem-per-gpu=16G job.sh"),
    ("mem-per-gpu-M", f"{SB} --gpus=2 --mem-per-gpu=16000 job.sh"),
    ("ntasks-per-gpu", f"{SB} -n4 --ntasks-per-gpu=2 job.sh"),
    ("ntasks-per-gpu-gpus", f"{SB} -n4 --ntasks-per-gpu=2 --gpus=2 job.sh"),
    ("ntasks-per-tres", f"{SB} -n4 --ntasks-per-tres=2 job.sh"),
    ("gpu-bind-closest", f"{SB} --gres=gpu:2 --gpu-bind=closest job.sh"),
    ("gpu-bind-single", f"{SB} --gpus-per-task=1 -n2 --gpu-bind=single:1 job.sh"),
    ("gpu-bind-map", f"{SB} --gpus=2 --gpu-bind=map_gpu:0,1 job.sh"),
    ("gpu-bind-verbose", f"{SB} --gpus=2 --gpu-bind=verbose,closest job.sh"),
    ("gpu-freq", f"{SB} --gpus=2 --gpu-freq=high job.sh"),
    ("tres-per-task", f"{SB} --tres-per-task=gres/gpu:1 -n2 job.sh"),
    ("tres-bind", f"{SB} --gpus=1 --tres-bind=gres/gpu:closest job.sh"),
    ("gres-and-gpn", f"{SB} --gres=gpu:2 --gpus-per-node=3 job.sh"),
    ("gpus-and-gpn", f"{SB} --gpus=8 --gpus-per-node=4 -N2 job.sh"),
    ("gres-cpg-bind", f"{SB} --gres=gpu:h100:2 --cpus-per-gpu=4 --gpu-bind=closest job.sh"),
    ("gres-flags", f"{SB} --gpus=2 --gres-flags=enforce-binding job.sh"),
    ("gpn-tpn-N2", f"{SB} --gpus-per-node=2 --ntasks-per-node=2 -N2 job.sh"),
    ("gres-mpg-cpg", f"{SB} --gres=gpu:h100:2 --mem-per-gpu=8G --cpus-per-gpu=4 -N1 job.sh"),
    ("gpus-constraint", f"{SB} --gpus=a100:2 --constraint=a100 job.sh"),
    ("gpus-cpg-mpg-gpt", f"{SB} -n2 --gpus-per-task=2 --cpus-per-gpu=2 --mem-per-gpu=1G job.sh"),
    ("gres-count-k", f"{SB} --gres=gpu:1k job.sh"),
    # --- time and memory ---
    ("time-min", f"{SB} -t 10 job.sh"),
    ("time-hms", f"{SB} -t 1:30:00 job.sh"),
    ("time-days", f"{SB} -t 2-00:00:00 job.sh"),
    ("time-unlimited", f"{SB} -t UNLIMITED job.sh"),
    ("time-mmss", f"{SB} -t 0:30 job.sh"),
    ("time-dh", f"{SB} -t 1-12 job.sh"),
    ("time-min-and-time", f"{SB} --time-min=10 -t 60 job.sh"),
    ("mem-G", f"{SB} --mem=8G job.sh"),
    ("mem-0", f"{SB} --mem=0 job.sh"),
    ("mem-per-cpu", f"{SB} --mem-per-cpu=2000 job.sh"),
    ("mem-M", f"{SB} --mem=500M job.sh"),
    ("mem-T", f"{SB} --mem=1T job.sh"),
    ("mem-per-cpu-G", f"{SB} --mem-per-cpu=1G -c2 job.sh"),
    # --- partition, QOS, account ---
    ("part-interactive", f"{SB} -p interactive job.sh"),
    ("part-list", f"{SB} -p spot,batch job.sh"),
    ("qos-debug", f"{SB} -q debug job.sh"),
    ("qos-account", f"{SB} -q high -A hpc-priority job.sh"),
    ("account", f"{SB} -A nsf-ai-grant job.sh"),
    ("part-mig", f"{SB} -p mig --gres=gpu:a100:1 job.sh"),
    ("part-qos-gpus-time", f"{SB} -p batch -q normal --gpus=h100:4 -t 4:00:00 job.sh"),
    # --- shape ---
    ("nodes-2", f"{SB} -N2 job.sh"),
    ("nodes-range", f"{SB} -N1-2 job.sh"),
    ("ntasks-8", f"{SB} -n8 job.sh"),
    ("ntasks-tpn", f"{SB} -n8 --ntasks-per-node=4 job.sh"),
    ("cpt-8", f"{SB} -c8 job.sh"),
    ("N2-tpn-c", f"{SB} -N2 --ntasks-per-node=2 -c4 job.sh"),
    ("exclusive", f"{SB} --exclusive job.sh"),
    ("exclusive-user", f"{SB} --exclusive=user -N1 job.sh"),
    ("oversubscribe", f"{SB} --oversubscribe job.sh"),
    ("nodelist", f"{SB} -w h100n1 job.sh"),
    ("exclude", f"{SB} -x a100n1 job.sh"),
    ("mincpus", f"{SB} --mincpus=4 job.sh"),
    ("cores-per-socket", f"{SB} --cores-per-socket=8 job.sh"),
    ("ntasks-per-socket", f"{SB} --ntasks-per-socket=2 -n4 job.sh"),
    ("threads-per-core", f"{SB} --threads-per-core=1 job.sh"),
    ("hint", f"{SB} --hint=nomultithread job.sh"),
    ("contiguous", f"{SB} --contiguous job.sh"),
    ("ntasks-per-core", f"{SB} --ntasks-per-core=1 -n2 job.sh"),
    ("B-extra", f"{SB} -B 2:8:1 job.sh"),
    ("N2-tpn", f"{SB} -N2 --ntasks-per-node=2 job.sh"),
    ("N2-tpn-gres", f"{SB} -N2 --ntasks-per-node=2 --gres=gpu:1 job.sh"),
    ("N2-tpn-c1", f"{SB} -N2 --ntasks-per-node=2 -c1 job.sh"),
    ("n6-tpn4", f"{SB} -n6 --ntasks-per-node=4 job.sh"),
    ("tpn-only", f"{SB} --ntasks-per-node=3 job.sh"),
    ("gpn-cpg-N2", f"{SB} -N2 --gpus-per-node=2 --cpus-per-gpu=3 job.sh"),
    ("gps-cpg", f"{SB} --gpus-per-socket=1 --sockets-per-node=2 --cpus-per-gpu=2 job.sh"),
    ("gpus-cpg-n4", f"{SB} -n4 --gpus=2 --cpus-per-gpu=3 job.sh"),
    # --- the rest ---
    ("job-name", f"{SB} -J myname job.sh"),
    ("comment", f"{SB} --comment=hello job.sh"),
    ("array", f"{SB} --array=0-3 job.sh"),
    ("array-throttle", f"{SB} --array=1-10%2 job.sh"),
    ("array-step", f"{SB} --array=0-7:2 --gpus=1 job.sh"),
    ("begin", f"{SB} --begin=now+1hour job.sh"),
    ("nice", f"{SB} --nice=10 job.sh"),
    ("requeue", f"{SB} --requeue job.sh"),
    ("no-requeue", f"{SB} --no-requeue job.sh"),
    ("wckey", f"{SB} --wckey=x job.sh"),
    ("mail", f"{SB} --mail-type=END --mail-user=a@b.c job.sh"),
    ("signal", f"{SB} --signal=USR1@60 job.sh"),
    ("wrap", f"{SB} --wrap=true"),
    ("wrap-gpus", f"{SB} -G h100:1 --wrap=true"),
    ("features-or", f"{SB} -C 'h100|a100' job.sh"),
    ("reservation", f"{SB} --reservation=nosuch job.sh"),
    ("licenses", f"{SB} -L foo:1 job.sh"),
    ("test-only-gpus", "sbatch --test-only --gpus=1 job.sh"),
    ("test-only-spot", "sbatch --test-only -p spot --gres=gpu:h100:1 job.sh"),
    ("no-hold", "sbatch job.sh"),
    ("no-hold-gpus", "sbatch --gpus=1 -t 1 job.sh"),
    ("directives", f"{SB} dir.sh"),
    ("directives-cli-override", f"{SB} --gpus-per-node=h100:1 -t 10 dir.sh"),
    ("script-args", f"{SB} --gpus=1 job.sh a b c"),
    ("het-gpus", f"{SB} -n1 --gpus=1 : -n2 -c2 job.sh"),
    ("het-parts", f"{SB} -p batch --gres=gpu:h100:1 : -p spot --gres=gpu:a100:1 job.sh"),
    # --- salloc (interactive: no batch script) ---
    ("salloc-n1", f"{SA} -n1"),
    ("salloc-gpus", f"{SA} --gpus=1"),
    ("salloc-gres", f"{SA} --gres=gpu:h100:2"),
    ("salloc-gpt", f"{SA} --gpus-per-task=1 -n2"),
    ("salloc-part-time", f"{SA} -p interactive -t 30 --gres=gpu:a100:1"),
    ("salloc-mem-c", f"{SA} --mem=4G -c2"),
    ("salloc-gpn-N2", f"{SA} -N2 --gpus-per-node=1"),
    ("salloc-qos", f"{SA} -q debug --gpus=1"),
    ("salloc-cpg", f"{SA} --cpus-per-gpu=4 --gpus=2"),
    ("salloc-mpg", f"{SA} --mem-per-gpu=4G --gpus=1"),
    ("salloc-het", f"{SA} -n1 : -n1"),
    ("salloc-ntasks-per-gpu", f"{SA} -n4 --ntasks-per-gpu=2"),
    ("salloc-gpu-bind", f"{SA} --gpus=1 --gpu-bind=closest"),
    ("salloc-job-name", f"{SA} -J inter -A nsf-ai-grant"),
    # --- srun outside an allocation (creates a job; interactive) ---
    ("srun-n1", f"{SR} -n1 true"),
    ("srun-gpus", f"{SR} -n2 --gpus=2 true"),
    ("srun-gres", f"{SR} --gres=gpu:h100:1 true"),
    ("srun-gpt", f"{SR} --gpus-per-task=1 -n2 true"),
    ("srun-gpn-N2", f"{SR} -N2 --gpus-per-node=1 true"),
    ("srun-part-time", f"{SR} -p interactive -t 5 --gpus=a100:1 true"),
    ("srun-mem-c", f"{SR} --mem=1G -c2 true"),
    ("srun-ntasks-per-gpu", f"{SR} --ntasks-per-gpu=2 -n4 true"),
    ("srun-gpu-bind", f"{SR} --gpus=1 --gpu-bind=closest true"),
    ("srun-cpg", f"{SR} --cpus-per-gpu=2 --gpus=1 true"),
    ("srun-het", f"{SR} -n1 : -n1 true"),
    ("srun-test-only", "srun --test-only -n1 true"),
    ("srun-exclusive", f"{SR} --exclusive -n1 true"),
    ("srun-mpg", f"{SR} --mem-per-gpu=2G --gpus=1 true"),
    ("srun-qos-account", f"{SR} -q debug -A nsf-ai-grant -t 2 true"),
    ("srun-gres-mixed", f"{SR} --gres=gpu:1,shard:1 true"),
    # --- scontrol update: slurm_job_modify ---
    ("update-time", "update:TimeLimit=30"),
    ("update-partition", "update:Partition=spot"),
    ("update-qos", "update:QOS=debug"),
    ("update-name", "update:Name=renamed"),
    ("update-numnodes", "update:NumNodes=2"),
    ("update-gres", "update:Gres=gpu:h100:2"),
    ("update-tres-per-node", "update:TresPerNode=gres/gpu:2"),
]


def run(argv: list[str], env: dict[str, str], cwd: str | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(argv, 124, exc.stdout or "", (exc.stderr or "") + "\n(timeout)")


def slurm_version() -> str:
    out = subprocess.run(["slurmctld", "-V"], capture_output=True, text=True, check=True).stdout
    return re.search(r"(\d+\.\d+\.\d+)", out).group(1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lab-dir", default="/tmp/slurm-gpu-lab-rec")
    ap.add_argument("--port-base", default="18817")
    ap.add_argument("--out", default=str(HERE / "fixtures"))
    ap.add_argument("--keep-up", action="store_true", help="leave the recording lab up")
    ap.add_argument("--only", help="regex of case ids to run")
    args = ap.parse_args()
    if os.path.realpath(args.lab_dir) == "/tmp/slurm-gpu-lab":
        print("capture: refusing to use the shared lab dir", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("capture: run as root (it starts a lab)", file=sys.stderr)
        return 2
    labenv = dict(os.environ, SLURM_GPU_LAB_DIR=args.lab_dir, SLURM_GPU_LAB_PORT_BASE=args.port_base)
    slurm_gpu = [sys.executable, "-m", "slurm_gpu.cli.main"] if not (REPO / ".venv/bin/slurm-gpu").exists() \
        else [str(REPO / ".venv/bin/slurm-gpu")]
    t0 = time.monotonic()
    r = run(slurm_gpu + ["lab", "up", "--restart", "--job-submit-lua", str(RECORD_LUA)], labenv, str(REPO), 600)
    print(r.stdout, r.stderr, file=sys.stderr)
    if r.returncode != 0:
        return 1
    try:
        return capture(args, labenv, t0)
    finally:
        if not args.keep_up:
            r = run(slurm_gpu + ["lab", "down"], labenv, str(REPO), 300)
            print(r.stdout.strip(), r.stderr.strip(), file=sys.stderr)


def capture(args: argparse.Namespace, labenv: dict[str, str], t0: float) -> int:
    lab = Path(args.lab_dir)
    conf = str(lab / "etc" / "slurm.conf")
    record = lab / "log" / "job_desc.jsonl"
    version = slurm_version()
    work = lab / "jobs" / "capture"
    work.mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o777)
    for name, text in (("job.sh", SCRIPT), ("dir.sh", DIRECTIVE_SCRIPT)):
        (work / name).write_text(text)
        os.chmod(work / name, 0o755)
    user_env = {"PATH": "/usr/bin:/bin", "SLURM_CONF": conf, "HOME": "/tmp", "LANG": "C.UTF-8"}
    root_env = dict(user_env)
    as_user = [shutil.which("runuser") or "/usr/sbin/runuser", "-u", "labuser", "--"]
    out_dir = Path(args.out) / version
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []

    def new_lines(start: int) -> tuple[list[dict], int]:
        for _ in range(20):  # the plugin writes before slurmctld answers; allow for a slow flush
            size = record.stat().st_size if record.exists() else 0
            if size > start:
                break
            time.sleep(0.05)
        if not record.exists():
            return [], 0
        data = record.read_bytes()
        lines = [json.loads(x) for x in data[start:].decode().splitlines() if x.strip()]
        return lines, len(data)

    pos = record.stat().st_size if record.exists() else 0
    for case_id, command in CASES:
        if args.only and not re.search(args.only, case_id):
            continue
        script = None
        if command.startswith("update:"):
            sub = run(as_user + ["sbatch", "--hold", "--gpus=1", "job.sh"], user_env, str(work))
            m = re.search(r"(\d+)", sub.stdout)
            _, pos = new_lines(pos)
            if not m:
                print(f"{case_id}: setup sbatch failed: {sub.stderr.strip()}", file=sys.stderr)
                continue
            argv = ["scontrol", "update", f"JobId={m.group(1)}", *shlex.split(command[len("update:"):])]
            script = SCRIPT
        else:
            argv = shlex.split(command)
            if "job.sh" in argv:
                script = SCRIPT
            elif "dir.sh" in argv:
                script = DIRECTIVE_SCRIPT
        r = run(as_user + argv, user_env, str(work), 60)
        dumps, pos = new_lines(pos)
        rows.append({
            "id": case_id, "slurm_version": version, "tool": argv[0], "argv": argv,
            "command": shlex.join(argv), "script": script, "rc": r.returncode,
            "stdout": r.stdout.strip()[-300:], "stderr": r.stderr.strip()[-500:],
            "dumps": dumps,
        })
        print(f"{case_id:28s} rc={r.returncode:<3d} dumps={len(dumps)} {r.stderr.strip()[-90:]!r}", file=sys.stderr)
        run(["scancel", "-u", "labuser"], root_env, None, 30)
    with open(out_dir / "cases.jsonl", "w") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=True) + "\n")
    n_dump = sum(1 for r in rows if r["dumps"])
    print(f"capture: Slurm {version}: {len(rows)} cases, {n_dump} with dumps, "
          f"{time.monotonic() - t0:.0f} s -> {out_dir / 'cases.jsonl'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
