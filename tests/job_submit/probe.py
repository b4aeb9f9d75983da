# SPDX-License-Identifier: Apache-2.0
"""Measure what a job_submit.lua can read, write and return (run by hand, as root; not collected by pytest).

    .venv/bin/python tests/job_submit/probe.py [--lab-dir /tmp/slurm-gpu-lab-probe] [--port-base 22817]
                                               [--out FILE|-] [--only REGEX]

Brings up a SECOND lab (like capture.py; never the shared /tmp/slurm-gpu-lab) with
``tests/job_submit/probe.lua`` as its job_submit plugin. For each case of :func:`cases` it writes the
case's action (``probe_action.lua`` beside slurm.conf: Lua bodies for slurm_job_submit and
slurm_job_modify), runs the setup submission and the command lines as the lab user, and keeps one JSON
line per case: every command's exit code, stdout and stderr, the probe's dumps (job_desc before and
after the action, job_rec in modify, the slurm.* constants), ``scontrol -d show job`` of every job
the case made, and the slurmctld.log lines that mention lua. Then it takes the lab down. For Slurm
24.11 run it in a Debian 13 root: tests/job_submit/probe_deb13.sh. docs/job_submit.md ("What the plugin
can do") summarises the results.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
from capture import run, slurm_version  # noqa: E402  (the sibling script, not a package)

PROBE_LUA = HERE / "probe.lua"
SCRIPT = "#!/bin/bash\ntrue\n"
SB = "sbatch --hold"
SA = "salloc --no-shell --immediate=10"
SR = "srun --immediate=10"
MSG = """slurm.log_user("%s", "msg with % and \\"double\\" 'single' quotes")"""
OK = "return slurm.SUCCESS"


def cases(version: str) -> list[dict]:
    """Each case: id, submit/modify (Lua bodies), setup (a held sbatch whose job id fills {job}), cmds."""
    new = not version.startswith(("21.", "22.", "23.02"))
    g = (lambda s: "gres/" + s) if new else (lambda s: "gres:" + s)
    other = (lambda s: "gres:" + s) if new else (lambda s: "gres/" + s)
    per_task = "gres/gpu:h100=1" if new else "gres:gpu:h100:1"
    upd = "scontrol update JobId={job} "
    out = [
        # 1. job_rec and job_desc in slurm_job_modify
        {"id": "modify-array", "setup": f"{SB} -p batch --qos=normal --gpus=h100:2 -t 30 --array=0-1 -A lab job.sh",
         "cmds": [upd + "Partition=spot", upd + "QOS=high", upd + "TimeLimit=45", upd + "Gres=gpu:4",
                  upd + f"TresPerJob={g('gpu:4')}", upd + f"TresPerNode={g('gpu:2')}", upd + "NumNodes=2",
                  upd + "Comment=upd"]},
        {"id": "modify-plain", "setup": f"{SB} -p interactive --qos=debug -N1 -n2 --ntasks-per-node=2 "
         "--gres=gpu:h100:1 --comment=c0 -J nm -C h100 -t 20 job.sh", "cmds": [upd + "TimeLimit=25"]},
        {"id": "modify-per-task", "setup": f"{SB} -n2 --gpus-per-task=h100:1 --cpus-per-gpu=2 --mem-per-gpu=1G job.sh",
         "cmds": [upd + "TimeLimit=25"]},
        {"id": "modify-per-socket", "setup": f"{SB} -N1 --sockets-per-node=2 --gpus-per-socket=1 job.sh",
         "cmds": [upd + "TimeLimit=25"]},
        {"id": "modify-ntasks-per-gpu", "setup": f"{SB} -n4 --ntasks-per-gpu=2 job.sh",
         "cmds": [upd + "TimeLimit=25"]},
        {"id": "modify-writes-comment", "setup": f"{SB} --gpus=1 job.sh", "cmds": [upd + "TimeLimit=25"],
         "modify": 'job_desc.comment = "set in modify"; job_desc.qos = "high"; return slurm.SUCCESS'},
        # 2. fields written by slurm_job_submit
        {"id": "w-partition", "submit": 'job_desc.partition = "interactive"; ' + OK, "cmds": [f"{SB} --gpus=1 job.sh"]},
        {"id": "w-partition-qos-spot", "submit": 'job_desc.partition = "spot"; job_desc.qos = "spot"; ' + OK,
         "cmds": [f"{SB} -p batch --gpus=1 job.sh"]},
        {"id": "w-qos", "submit": 'job_desc.qos = "high"; ' + OK, "cmds": [f"{SB} --gpus=1 job.sh"]},
        {"id": "w-time", "submit": "job_desc.time_limit = 45; " + OK, "cmds": [f"{SB} --gpus=1 -t 10 job.sh"]},
        {"id": "w-requeue0", "submit": "job_desc.requeue = 0; " + OK, "cmds": [f"{SB} --requeue job.sh"]},
        {"id": "w-requeue1", "submit": "job_desc.requeue = 1; " + OK, "cmds": [f"{SB} --no-requeue job.sh"]},
        {"id": "w-comment", "submit": "job_desc.comment = " + json.dumps("by plugin") + "; " + OK,
         "cmds": [f"{SB} job.sh"]},
        {"id": "w-tpj", "submit": f'job_desc.tres_per_job = "{g("gpu:h100:2")}"; ' + OK,
         "cmds": [f"{SB} --gpus=1 job.sh"]},
        {"id": "w-tpj-other-spelling", "submit": f'job_desc.tres_per_job = "{other("gpu:h100:2")}"; ' + OK,
         "cmds": [f"{SB} --gpus=1 job.sh"]},
        {"id": "w-tpj-bare", "submit": 'job_desc.tres_per_job = "gpu:h100:2"; ' + OK,
         "cmds": [f"{SB} --gpus=1 job.sh"]},
        {"id": "w-tpj-from-nothing", "submit": f'job_desc.tres_per_job = "{g("gpu:h100:2")}"; ' + OK,
         "cmds": [f"{SB} job.sh"]},
        {"id": "w-tpn", "submit": f'job_desc.tres_per_node = "{g("gpu:h100:2")}"; ' + OK,
         "cmds": [f"{SB} --gres=gpu:1 job.sh"]},
        {"id": "w-tpn-bare", "submit": 'job_desc.tres_per_node = "gpu:h100:2"; ' + OK,
         "cmds": [f"{SB} --gres=gpu:1 job.sh"]},
        {"id": "w-gres", "submit": 'job_desc.gres = "gpu:h100:2"; ' + OK, "cmds": [f"{SB} --gres=gpu:1 job.sh"]},
        {"id": "w-gres-prefixed", "submit": f'job_desc.gres = "{g("gpu:h100:2")}"; ' + OK,
         "cmds": [f"{SB} --gres=gpu:1 job.sh"]},
        {"id": "w-tpt", "submit": f'job_desc.tres_per_task = "{per_task}"; ' + OK,
         "cmds": [f"{SB} -n2 --gpus-per-task=1 job.sh"]},
        {"id": "w-tpt-from-nothing", "submit": f'job_desc.tres_per_task = "{per_task}"; ' + OK,
         "cmds": [f"{SB} -n2 job.sh"]},
        {"id": "w-tps", "submit": f'job_desc.tres_per_socket = "{g("gpu:h100:1")}"; ' + OK,
         "cmds": [f"{SB} -N1 --sockets-per-node=2 --gpus-per-socket=2 job.sh"]},
        {"id": "w-move-nil",
         "submit": f'job_desc.tres_per_node = nil; job_desc.tres_per_job = "{g("gpu:h100:2")}"; ' + OK,
         "cmds": [f"{SB} --gpus-per-node=2 job.sh"]},
        {"id": "w-clear-empty", "submit": 'job_desc.tres_per_node = ""; ' + OK, "cmds": [f"{SB} --gres=gpu:2 job.sh"]},
        {"id": "w-gres-nil", "submit": "job_desc.gres = nil; " + OK, "cmds": [f"{SB} --gres=gpu:2 job.sh"]},
        # 3. return codes and messages
        {"id": "r-error", "submit": MSG + "; return slurm.ERROR",
         "cmds": [f"{SB} job.sh", "sbatch --test-only job.sh", f"{SA} -n1", f"{SR} -n1 true"]},
        {"id": "r-invalid-gres", "submit": MSG + "; return slurm.ESLURM_INVALID_GRES",
         "cmds": [f"{SB} job.sh", "sbatch --test-only job.sh", f"{SA} -n1", f"{SR} -n1 true"]},
        {"id": "r-invalid-qos", "submit": MSG + "; return slurm.ESLURM_INVALID_QOS", "cmds": [f"{SB} job.sh"]},
        {"id": "r-invalid-part", "submit": MSG + "; return slurm.ESLURM_INVALID_PARTITION_NAME",
         "cmds": [f"{SB} job.sh"]},
        {"id": "r-two-messages",
         "submit": 'slurm.log_user("first"); slurm.log_user("second %d", 2); return slurm.ERROR',
         "cmds": [f"{SB} job.sh"]},
        {"id": "r-number-2", "submit": 'slurm.log_user("two"); return 2', "cmds": [f"{SB} job.sh"]},
        {"id": "r-modify-error", "setup": f"{SB} --gpus=1 job.sh", "modify": MSG + "; return slurm.ERROR",
         "cmds": [upd + "TimeLimit=10"]},
        {"id": "r-modify-invalid-gres", "setup": f"{SB} --gpus=1 job.sh",
         "modify": MSG + "; return slurm.ESLURM_INVALID_GRES", "cmds": [upd + "TimeLimit=10"]},
        {"id": "r-number-2072", "submit": MSG + "; return 2072",
         "cmds": [f"{SB} job.sh", f"{SA} -n1", f"{SR} -n1 true"]},
        {"id": "r-log-user-success", "submit": MSG + "; " + OK, "cmds": [f"{SB} job.sh", f"{SA} -n1"]},
        {"id": "r-modify-number-2072", "setup": f"{SB} --gpus=1 job.sh", "modify": MSG + "; return 2072",
         "cmds": [upd + "TimeLimit=10"]},
        {"id": "r-modify-log-user-success", "setup": f"{SB} --gpus=1 job.sh", "modify": MSG + "; " + OK,
         "cmds": [upd + "TimeLimit=10"]},
        # 4. Lua errors
        {"id": "e-submit", "submit": 'error("probe boom")',
         "cmds": [f"{SB} job.sh", f"{SA} -n1", f"{SR} -n1 true"]},
        {"id": "e-submit-after-log-user", "submit": 'slurm.log_user("before the error"); error("probe boom 2")',
         "cmds": [f"{SB} job.sh"]},
        {"id": "e-submit-nil-return", "submit": "local x = 1", "cmds": [f"{SB} job.sh"]},
        {"id": "e-submit-bad-field-type", "submit": "job_desc.time_limit = {}; " + OK, "cmds": [f"{SB} job.sh"]},
        {"id": "e-log-user-bare-percent", "submit": 'slurm.log_user("100% sure"); return slurm.ERROR',
         "cmds": [f"{SB} job.sh"]},
        {"id": "e-modify", "setup": f"{SB} --gpus=1 job.sh", "modify": 'error("probe boom modify")',
         "cmds": [upd + "TimeLimit=10"]},
        # 5. script and user_name (the dumps of every sbatch/salloc/srun above, and these)
        {"id": "q5", "cmds": [f"{SB} job.sh", f"{SA} -n1", f"{SR} -n1 true"]},
    ]
    return out


def action_lua(case: dict) -> str:
    return ("-- written by tests/job_submit/probe.py for case " + case["id"] + "\nreturn {\n"
            f"  submit = function(job_desc, part_list, uid) {case.get('submit', OK)} end,\n"
            f"  modify = function(job_desc, job_rec, part_list, uid) {case.get('modify', OK)} end,\n}}\n")


def job_ids(text: str) -> list[str]:
    return re.findall(r"(?:batch job|allocation|job) (\d+)", text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lab-dir", default="/tmp/slurm-gpu-lab-probe")
    ap.add_argument("--port-base", default="22817")
    ap.add_argument("--out", default="-", help="JSON lines file, '-' for stdout")
    ap.add_argument("--only", help="regex of case ids to run")
    ap.add_argument("--keep-up", action="store_true")
    args = ap.parse_args()
    if os.path.realpath(args.lab_dir) == "/tmp/slurm-gpu-lab":
        print("probe: refusing to use the shared lab dir", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("probe: run as root (it starts a lab)", file=sys.stderr)
        return 2
    labenv = dict(os.environ, SLURM_GPU_LAB_DIR=args.lab_dir, SLURM_GPU_LAB_PORT_BASE=args.port_base)
    slurm_gpu = [str(REPO / ".venv/bin/slurm-gpu")] if (REPO / ".venv/bin/slurm-gpu").exists() \
        else [sys.executable, "-m", "slurm_gpu.cli.main"]
    r = run(slurm_gpu + ["lab", "up", "--restart", "--job-submit-lua", str(PROBE_LUA)], labenv, str(REPO), 600)
    print(r.stdout, r.stderr, file=sys.stderr)
    rows: list[dict] = []
    try:
        if r.returncode != 0:
            return 1
        rows = probe(args)
    finally:
        if not args.keep_up:
            r = run(slurm_gpu + ["lab", "down"], labenv, str(REPO), 300)
            print(r.stdout.strip(), r.stderr.strip(), file=sys.stderr)
    text = "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows)
    if args.out == "-":
        sys.stdout.write(text)
    else:
        Path(args.out).write_text(text)
    return 0


def probe(args: argparse.Namespace) -> list[dict]:
    lab = Path(args.lab_dir)
    conf = str(lab / "etc" / "slurm.conf")
    dump_file, ctld_log = lab / "log" / "probe.jsonl", lab / "log" / "slurmctld.log"
    action_file = lab / "etc" / "probe_action.lua"
    version = slurm_version()
    work = lab / "jobs" / "probe"
    work.mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o777)
    (work / "job.sh").write_text(SCRIPT)
    os.chmod(work / "job.sh", 0o755)
    user_env = {"PATH": "/usr/bin:/bin", "SLURM_CONF": conf, "HOME": "/tmp", "LANG": "C.UTF-8"}
    as_user = [shutil.which("runuser") or "/usr/sbin/runuser", "-u", "labuser", "--"]

    def size(p: Path) -> int:
        return p.stat().st_size if p.exists() else 0

    def tail(p: Path, start: int) -> str:
        return p.read_bytes()[start:].decode(errors="replace") if p.exists() else ""

    rows = []
    for case in cases(version):
        if args.only and not re.search(args.only, case["id"]):
            continue
        action_file.write_text(action_lua(case))
        os.chmod(action_file, 0o644)
        d0, l0 = size(dump_file), size(ctld_log)
        jobs: list[str] = []
        results = []
        job = ""
        if case.get("setup"):
            s = run(as_user + shlex.split(case["setup"]), user_env, str(work))
            jobs += job_ids(s.stdout + s.stderr)
            job = jobs[0] if jobs else "NONE"
            results.append({"cmd": case["setup"], "rc": s.returncode, "stdout": s.stdout.strip()[-400:],
                            "stderr": s.stderr.strip()[-600:]})
        for cmd in case["cmds"]:
            argv = shlex.split(cmd.format(job=job))
            r = run(as_user + argv, user_env, str(work), 60)
            jobs += [j for j in job_ids(r.stdout + r.stderr) if j not in jobs]
            results.append({"cmd": shlex.join(argv), "rc": r.returncode, "stdout": r.stdout.strip()[-400:],
                            "stderr": r.stderr.strip()[-600:]})
        time.sleep(0.3)
        dumps = [json.loads(x) for x in tail(dump_file, d0).splitlines() if x.strip()]
        shows = {j: run(["scontrol", "-d", "show", "job", j], user_env, None, 30).stdout for j in jobs}
        lua_log = [x for x in tail(ctld_log, l0).splitlines() if re.search(r"lua|job_submit|boom", x)][:30]
        rows.append({"id": case["id"], "slurm_version": version, "action": action_lua(case), "results": results,
                     "dumps": dumps, "show_job": shows, "ctld_log": lua_log})
        print(f"{case['id']:28s} " + " ".join(f"rc={x['rc']}" for x in results) + f" dumps={len(dumps)}",
              file=sys.stderr)
        run(["scancel", "-u", "labuser"], user_env, None, 30)
    return rows


if __name__ == "__main__":
    sys.exit(main())
