# SPDX-License-Identifier: Apache-2.0
"""Side-by-side harness: submit each corpus script with ``sbatch`` and with ``gpusub`` (same command line,
same environment, as the lab user), let them run (or hold them), and reduce each job to what must agree.

What a job is reduced to comes from Slurm's own record (squeue's JSON, the one job reader) and from the records
the stand-in launchers and the BASH_ENV recorder append to the script's log (tests/fidelity/bin). Nothing
here reads gpusub's output beyond its exit status and the job id it prints.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from slurm_gpu.slurm.records import job_tres

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.join(HERE, "bin")
SCRIPTS = os.path.join(HERE, "scripts")
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL",
         "DEADLINE"}
# run: runs to the end; hold: submitted with --hold, compared, cancelled; refuse: sbatch refuses it;
# never: sbatch takes it but it can never start (pends=<Slurm's reason>): compared pending, cancelled
MODES = ("run", "hold", "refuse", "never")
COUNT_PREFIXES = ("batch", "python", "launch.", "worker.")
SUMMARY_KEYS = ("nodes", "tasks", "cpus", "gpus", "gpu_request_type", "mem_mb", "array", "time", "state",
                "exit")


@dataclass(frozen=True)
class Script:
    name: str
    path: str
    sha: str
    expect: dict[str, str]
    argv: tuple[str, ...]  # options before the script (# fidelity-argv:)
    args: tuple[str, ...]  # the script's own arguments (# fidelity-args:)
    env: tuple[tuple[str, str], ...] = ()  # SBATCH_* input variables (# fidelity-env:)
    stdin: bool = False  # submitted on standard input, no script named (# fidelity-submit: stdin)
    known: tuple[frozenset[str], str] = (frozenset(), "")  # (# fidelity-known: WHERE REASON)

    def known_failure(self, where: str) -> str:
        """The reason of a disagreement known to another part of the work (``where``: ``plugin`` /
        ``plain``, the gpusub-vs-sbatch test in that lab; ``plugin-sbatch``: sbatch against the manifest
        in the lab with the compiled job_submit.lua), or ""."""
        return self.known[1] if where in self.known[0] else ""

    @property
    def mode(self) -> str:
        return self.expect["mode"]


def load_corpus(directory: str = SCRIPTS) -> list[Script]:
    out = []
    for fname in sorted(os.listdir(directory)):
        if not fname.endswith(".sh"):
            continue
        path = os.path.join(directory, fname)
        with open(path, "rb") as fh:
            data = fh.read()
        text = data.decode()
        meta = dict(re.findall(r"^# fidelity-(expect|argv|args|env|submit|known): (.*)$", text, re.M))
        if "expect" not in meta:
            raise ValueError(f"{path}: no '# fidelity-expect:' line")
        expect = dict(kv.split("=", 1) for kv in meta["expect"].split())
        if expect.get("mode") not in MODES:
            raise ValueError(f"{path}: mode must be one of {', '.join(MODES)}")
        if (expect["mode"] == "never") != ("pends" in expect):
            raise ValueError(f"{path}: mode=never and pends=<Slurm's reason> go together")
        if meta.get("submit", "file") not in ("file", "stdin"):
            raise ValueError(f"{path}: fidelity-submit must be file or stdin")
        if meta.get("submit") == "stdin" and meta.get("args"):
            raise ValueError(f"{path}: a script on standard input takes no arguments (sbatch has none to give)")
        out.append(Script(fname[:-3], path, hashlib.sha256(data).hexdigest(), expect,
                          tuple(shlex.split(meta.get("argv", ""))), tuple(shlex.split(meta.get("args", ""))),
                          tuple(tuple(kv.split("=", 1)) for kv in shlex.split(meta.get("env", ""))),
                          meta.get("submit") == "stdin", known(path, meta.get("known", ""))))
    return out


KNOWN_WHERE = frozenset({"plugin", "plain", "plugin-sbatch"})


def known(path: str, text: str) -> tuple[frozenset[str], str]:
    """``plugin,plain issue 19 item 3: why`` -> ({"plugin", "plain"}, "issue 19 item 3: why")."""
    if not text:
        return frozenset(), ""
    where, _, why = text.partition(" ")
    labs = frozenset(where.split(","))
    if not labs <= KNOWN_WHERE or not why.strip():
        raise ValueError(f"{path}: fidelity-known: WHERE (of {', '.join(sorted(KNOWN_WHERE))}) and a reason")
    return labs, why.strip()


def task_ids(spec: str) -> tuple[int, ...]:
    """``0-3``, ``1,3,5``, ``1-5:2``, ``0-99%10`` -> the task ids."""
    ids: list[int] = []
    for part in spec.split("%")[0].split(","):
        rng, _, step = part.partition(":")
        lo, _, hi = rng.partition("-")
        ids.extend(range(int(lo), int(hi or lo) + 1, int(step or 1)))
    return tuple(sorted(ids))


def mem_mb(value: str) -> int:
    m = re.fullmatch(r"([0-9.]+)([KMGT]?)", value)
    if not m:
        return -1
    scale = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 * 1024}[m.group(2)]
    return round(float(m.group(1)) * scale)




def summarize(f: dict[str, str]) -> dict[str, object]:
    """One job record (the lab helper's job reader: squeue's JSON in scontrol's field names) -> the values
    side-by-side must agree on (plus partition/QOS)."""
    tres = job_tres(f)  # TRES= (22.05) or ReqTRES=/AllocTRES= (24.11)
    requested = " ".join(f.get(k, "") for k in ("TresPerNode", "TresPerJob", "TresPerTask", "TresPerSocket"))
    types = sorted(set(re.findall(r"gpu:([A-Za-z][\w.]*):\d+", requested)))
    return {
        "nodes": int(f.get("NumNodes", "0").split("-")[0] or 0),
        "tasks": f.get("NumTasks"),
        "cpus": f.get("NumCPUs"),
        "gpus": int(tres.get("gres/gpu", "0")),
        "gpu_types": {k.split(":", 1)[1]: int(v) for k, v in tres.items() if k.startswith("gres/gpu:")},
        "gpu_request_type": ",".join(types) or None,
        "mem_mb": mem_mb(tres.get("mem", "0")),
        "array": f.get("ArrayTaskId"),
        "time": f.get("TimeLimit"),
        "state": f.get("JobState"),
        "exit": f.get("ExitCode"),
        "reason": f.get("Reason"),
        "partition": f.get("Partition"),
        "qos": f.get("QOS"),
        "stdout": f.get("StdOut"),
        "restarts": int(f.get("Restarts", "0") or 0),
    }


@dataclass
class Side:
    """One submission (sbatch or gpusub) of one script and what came of it."""

    tool: str
    argv: list[str]
    rc: int = -1
    out: str = ""
    err: str = ""
    job: str | None = None
    records: list[dict[str, object]] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)
    others: list[str] = field(default_factory=list)
    unfinished: str = ""
    env: dict[str, dict[str, str]] = field(default_factory=dict)  # array task ("-": none) -> batch step env

    def by_task(self) -> dict[str, dict[str, object]]:
        return {str(r["array"]): r for r in self.records}

    def describe(self) -> str:
        head = f"{self.tool}: rc={self.rc} job={self.job} argv={shlex.join(self.argv)}"
        msg = (self.err or self.out).strip()
        return head + (f"\n    says: {msg}" if msg else "")


@dataclass
class Case:
    script: Script
    workdir: str
    sides: dict[str, Side] = field(default_factory=dict)
    rerun: str = ""  # why this is the case's second run (run_all), or ""

    def restarted(self) -> list[str]:
        """The sides whose job Slurm started more than once (requeued: preempted, or a node failed)."""
        return [f"{t} job {s.job} (restarts {max(int(str(r.get('restarts') or 0)) for r in s.records)})"
                for t, s in self.sides.items() if any(r.get("restarts") for r in s.records)]

    def spread(self) -> list[str]:
        """The sides whose job Slurm placed on another number of nodes than the manifest's ``nodes=`` or the
        other side's: a job that sets no node count (``--gpus=h100:2``) is spread over two nodes when no
        node has the GPUs and CPUs free at that moment (measured: 24.11.5, env-sbatch-gpus-time; 26.05.5,
        cpus-per-gpu; both sbatch's own job, with the other cases running beside it)."""
        counts = {t: sorted(int(str(r.get("nodes") or 0)) for r in s.records) for t, s in self.sides.items()}
        want = self.script.expect.get("nodes")
        sides_differ = len({tuple(c) for c in counts.values()}) > 1
        out = [f"{t} job {self.sides[t].job} on {'/'.join(map(str, c))} node(s)" for t, c in counts.items()
               if c and (sides_differ or (want is not None and any(n != int(want) for n in c)))]
        return [x + (f" (the manifest: {want})" if want is not None else "") for x in out]

    def disturbed(self) -> list[str]:
        """Why this run's outcome may be its neighbours' doing (run_all runs such a case again, alone)."""
        return self.restarted() + self.spread() if self.script.mode == "run" else []


class Runner:
    """Submits the corpus through the lab (``lab`` is tests/conftest.py's SlurmLab)."""

    def __init__(self, lab, gpusub: str, base: str):
        self.lab, self.gpusub, self.base = lab, gpusub, base
        self.venv_bin = os.path.dirname(gpusub)

    def env(self, case: Case) -> dict[str, str]:
        return {
            "PATH": f"{BIN}:{self.venv_bin}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "SLURM_CONF": self.lab.slurm_conf, "GPUSUB_POLICY": self.lab.policy_path,
            "BASH_ENV": os.path.join(BIN, "record-batch.sh"),
            "FIDELITY_LOG": os.path.join(case.workdir, "records.log"), "FIDELITY_SCRIPT_SHA": case.script.sha,
            "HOME": case.workdir, "USER": self.lab.user, "LOGNAME": self.lab.user, "LANG": "C.UTF-8",
        } | dict(case.script.env)

    def prepare(self, script: Script, suffix: str = "") -> Case:
        work = os.path.join(self.base, script.name + suffix)
        os.makedirs(os.path.join(work, "logs"))
        for fname in os.listdir(SCRIPTS):
            if fname.endswith(".py") or fname == script.name + ".sh":
                shutil.copy(os.path.join(SCRIPTS, fname), work)
        log = os.path.join(work, "records.log")
        open(log, "w").close()
        os.chmod(log, 0o666)
        for root, dirs, files in os.walk(work):
            for name in [root, *(os.path.join(root, x) for x in dirs + files)]:
                shutil.chown(name, self.lab.user)
        return Case(script, work)

    def submit(self, case: Case, tool: str) -> Side:
        s = case.script
        exe = "sbatch" if tool == "sbatch" else self.gpusub
        script = [] if s.stdin else [s.name + ".sh", *s.args]
        argv = [*(["--hold"] if s.mode == "hold" else []), *s.argv, *script]
        if tool == "gpusub":  # FIDELITY_GPUSUB_OPTS: only for a negative control, e.g. --launch per-gpu
            argv = [*shlex.split(os.environ.get("FIDELITY_GPUSUB_OPTS", "")), *argv]
        env = [f"{k}={v}" for k, v in self.env(case).items()]
        side = Side(tool, [tool, *argv, *(["< " + s.name + ".sh"] if s.stdin else [])])
        try:
            with open(s.path, "rb") as fh:
                stdin = fh.read() if s.stdin else b""
            r = subprocess.run(["runuser", "-u", self.lab.user, "--", "env", "-i", *env, exe, *argv],
                               cwd=case.workdir, capture_output=True, input=stdin, timeout=90)
            r = subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(errors="replace"),
                                            r.stderr.decode(errors="replace"))
        except subprocess.TimeoutExpired:
            side.err = "did not return within 90 s"
            return side
        side.rc, side.out, side.err = r.returncode, r.stdout, r.stderr
        m = re.search(r"(\d+)(?:;\S+)?\s*$", r.stdout)
        if r.returncode == 0 and m:
            side.job = m.group(1)
        if side.job and s.mode in ("hold", "never"):
            self.collect(side, settle=s.expect.get("pends"))
            self.scancel(side.job)
        return side

    def run_case(self, case: Case) -> Case:
        for tool in ("sbatch", "gpusub"):
            case.sides[tool] = self.submit(case, tool)
        if case.script.mode == "refuse":  # accepted by mistake: do not let it run
            for side in case.sides.values():
                if side.job:
                    self.collect(side)
                    self.scancel(side.job)
        return case

    def scancel(self, job: str) -> None:
        subprocess.run(["scancel", job], env=self.lab.env(), capture_output=True, timeout=20)

    def collect(self, side: Side, settle: str | None = None) -> None:
        """Slurm's record of the job; with ``settle``, once it pends for that reason (the scheduler's first
        reasons, such as PartitionConfig, are provisional), or after 20 s."""
        deadline = time.monotonic() + 20
        while True:
            side.records = sorted((summarize(x) for x in self.lab.job_records(side.job)),
                                  key=lambda rec: str(rec["array"]))
            unsettled = [x for x in side.records if x["state"] == "PENDING" and x["reason"] != settle]
            if not settle or not unsettled or time.monotonic() > deadline:
                return
            time.sleep(1)

    def states(self, jobs: list[str]) -> dict[str, str] | None:
        """job -> "STATE (reason)" of its unfinished parts, "" when finished; None if squeue failed."""
        r = subprocess.run(["squeue", "-h", "-t", "all", "-j", ",".join(jobs), "-o", "%F %T %r"],
                           env=self.lab.env(), capture_output=True, text=True, timeout=20)
        if r.returncode != 0:
            return None
        out = dict.fromkeys(jobs, "")
        for line in r.stdout.splitlines():
            job, state, reason = (line.split(None, 2) + ["", ""])[:3]
            if state not in FINAL and job in out:
                out[job] = f"{state} ({reason})"
        return out

    def wait(self, sides: list[Side], timeout_s: float) -> None:
        """Poll until every job of ``sides`` is in a final state, or cancel what is left at the deadline.
        A job slurmctld no longer knows (the shared lab was restarted) is marked, not waited for."""
        pending = {s.job: s for s in sides if s.job}
        deadline = time.monotonic() + timeout_s
        last: dict[str, str] = {}
        while pending and time.monotonic() < deadline:
            now = self.states(list(pending))
            if now is None:  # one of them is unknown: ask one by one
                now = {}
                for job in list(pending):
                    one = self.states([job])
                    if one is None:
                        pending.pop(job).unfinished = "slurmctld no longer knows the job (was the lab restarted?)"
                    else:
                        now.update(one)
            for job, busy in now.items():
                if not busy:
                    pending.pop(job, None)
            last = now
            if pending:
                time.sleep(2)
        for job, side in pending.items():
            side.unfinished = f"not finished after {timeout_s:g} s: {last.get(job, '?')}"
            self.scancel(job)

    def read_logs(self, case: Case) -> None:
        try:
            with open(os.path.join(case.workdir, "records.log")) as fh:
                lines = fh.read().splitlines()
        except FileNotFoundError:
            lines = []
        by_job: dict[str, list[tuple[str, list[str]]]] = {}
        for line in lines:
            t = line.split()
            if t and t[0] in ("launch", "worker") and len(t) > 2:
                key, rest = f"{t[0]}.{t[1]}", t[2:]
            elif t and t[0] == "other-script" and len(t) > 3:
                key, rest = "other-script " + " ".join(t[1:3]), t[3:]
            elif t:
                key, rest = t[0], t[1:]
            else:
                continue
            by_job.setdefault(rest[0] if rest else "-", []).append((key, rest))
        for side in case.sides.values():
            side.env = read_envs(case.workdir, side.job)
            for key, rest in by_job.get(side.job or "", []):
                if key.startswith("other-script"):
                    side.others.append(f"{key} step={rest[2] if len(rest) > 2 else '?'}")
                else:
                    side.counts[key] += 1


def read_envs(workdir: str, job: str | None) -> dict[str, dict[str, str]]:
    """The batch step's environment of each of the job's array tasks (written by bin/record-batch.sh)."""
    out: dict[str, dict[str, str]] = {}
    if not job:
        return out
    for fname in os.listdir(workdir):
        parts = fname.split(".")
        if len(parts) == 3 and parts[0] == "env" and parts[1] == job:
            with open(os.path.join(workdir, fname), "rb") as fh:
                items = fh.read().split(b"\0")
            out[parts[2]] = dict(x.decode(errors="replace").partition("=")[::2] for x in items if x)
    return out


# The batch step's variables allowed to differ between the sbatch job and the gpusub job (docs/gpusub.md,
# "The job's environment"); every other variable must be the same, present in both or in neither.
ENV_DIFFER = {  # pattern -> why
    r"SLURM_JOB_ID|SLURM_JOBID|SLURM_ARRAY_JOB_ID|SLURM_JOB_ID_HET_GROUP_\d+|SLURM_HET_JOB_ID": "job id",
    r"SLURM_TASK_PID|SLURM_JOB_START_TIME|SLURM_JOB_END_TIME": "process id, start and end time",
    r"HOSTNAME|SLURMD_NODENAME|SLURM_NODELIST|SLURM_JOB_NODELIST(_HET_GROUP_\d+)?|SLURM_TOPOLOGY_ADDR": "node names",
    r"SLURM_CPU_BIND|SLURM_CPU_BIND_(TYPE|LIST|VERBOSE)|SLURM_NTASKS_PER_SOCKET": "gpusub's documented binding",
    r"GPUSUB_CKPT_[A-Z_]+|GPUSUB_RESTART_COUNT|GPUSUB_RESUME_FROM": "the checkpoint protocol's (docs/checkpointing.md)",
}
# placement: which GPUs the job got; the number of them must agree
ENV_PLACEMENT = frozenset({"CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK",
                           "SLURM_JOB_GPUS", "SLURM_STEP_GPUS"})
# where the policy routed the job elsewhere than Slurm's default (the records' partition or QOS differ)
ENV_ROUTED = {"partition": re.compile(r"SLURM_JOB_PARTITION(_HET_GROUP_\d+)?"),
              "qos": re.compile(r"SLURM_JOB_QOS(_HET_GROUP_\d+)?")}
_ENV_DIFFER = re.compile("|".join(f"(?:{p})" for p in ENV_DIFFER))
# per node, in the order of the job's nodes (Slurm's "3,1" or "2(x2)"): which node holds what is placement;
# the values, as a multiset, must agree. SLURM_CPUS_ON_NODE is the batch node's one of them.
ENV_PER_NODE = frozenset({"SLURM_JOB_CPUS_PER_NODE", "SLURM_TASKS_PER_NODE"})


def per_node(value: str) -> list[str]:
    """``2(x2),1`` -> ["1", "2", "2"] (sorted)."""
    out: list[str] = []
    for item in value.split(","):
        m = re.fullmatch(r"(.*)\(x(\d+)\)", item)
        out += [m.group(1)] * int(m.group(2)) if m else [item]
    return sorted(out)


def _spread_by_slurm(want: dict[str, str], a: str, b: str) -> bool:
    """Per-node counts that Slurm chose by the CPUs free at the time: the job asked no per-node task count
    (-N 2 -n 4 without --ntasks-per-node: "2(x2)" on idle nodes, "3,1" where one had a core left), the same
    nodes and the same total. Taken as agreement only for jobs the policy routed to another partition,
    which ran on other nodes at another time (measured: 24.11.5's plain lab, srun-eval-2nodes-cpu)."""
    if "SLURM_NTASKS_PER_NODE" in want:
        return False
    x, y = per_node(a), per_node(b)
    if len(x) != len(y) or not all(v.isdigit() for v in x + y):
        return False
    return sum(map(int, x)) == sum(map(int, y))


def env_differences(want: dict[str, str], got: dict[str, str], routed: frozenset[str] = frozenset()) -> list[str]:
    """What differs between sbatch's batch-step environment (``want``) and gpusub's, less what may.
    ``routed``: "partition" and/or "qos" when the jobs' records differ there (the policy chose)."""
    out = []
    for name in sorted(set(want) | set(got)):
        a, b = want.get(name), got.get(name)
        if a == b or _ENV_DIFFER.fullmatch(name):
            continue
        if any(ENV_ROUTED[k].fullmatch(name) for k in routed):
            continue
        if name in ENV_PLACEMENT and a is not None and b is not None and len(a.split(",")) == len(b.split(",")):
            continue
        if name in ENV_PER_NODE and a is not None and b is not None and per_node(a) == per_node(b):
            continue
        if name in ENV_PER_NODE and a is not None and b is not None and routed and _spread_by_slurm(want, a, b):
            continue
        if (name == "SLURM_CPUS_ON_NODE" and a is not None and b is not None
                and a in per_node(want.get("SLURM_JOB_CPUS_PER_NODE", a))
                and b in per_node(got.get("SLURM_JOB_CPUS_PER_NODE", b))):
            continue
        out.append(f"{name}: sbatch {a!r}, gpusub {b!r}")
    return out


def _finish(runner: Runner, cases: list[Case], wait_s: float) -> None:
    running = [side for c in cases if c.script.mode == "run" for side in c.sides.values()]
    runner.wait(running, wait_s)
    for c in cases:
        if c.script.mode == "run":
            for side in c.sides.values():
                if side.job:
                    runner.collect(side)
            runner.read_logs(c)


def run_all(lab, gpusub: str, scripts: list[Script], base: str, wait_s: float = 200) -> dict[str, Case]:
    """Every script, six at a time, both sides. The corpus runs side by side on one lab, so one case's jobs
    can change what Slurm does with another's: a job in a preemptible partition is requeued when a
    neighbour's job needs its node (measured once in CI: partition-spot-requeue's gpusub job), and a job
    with no node count is spread over two nodes when no node has its GPUs free (Case.spread). Such a case
    (Case.disturbed) is run again, alone, once the rest have finished, and judged on that run: a side that
    requeues itself or asks for other nodes (a fault of gpusub) does it again there and fails."""
    runner = Runner(lab, gpusub, base)
    cases = [runner.prepare(s) for s in scripts]
    with ThreadPoolExecutor(max_workers=6) as pool:
        cases = list(pool.map(runner.run_case, cases))
    _finish(runner, cases, wait_s)
    for i, c in enumerate(cases):
        why = c.disturbed()
        if not why:
            continue
        again = runner.run_case(runner.prepare(c.script, ".rerun"))
        _finish(runner, [again], wait_s)
        again.rerun = f"run again alone: the first run ({c.workdir}) had {', '.join(why)}"
        cases[i] = again
    return {c.script.name: c for c in cases}


def expected_counts(script: Script) -> Counter:
    return Counter({k: int(v) for k, v in script.expect.items() if k.startswith(COUNT_PREFIXES) and int(v)})


def output_tail(side: Side, lines: int = 6) -> str:
    out = []
    for rec in side.records[:2]:
        path = str(rec.get("stdout") or "")
        if os.path.isfile(path):
            with open(path, errors="replace") as fh:
                out.append(f"    {path}:\n" + "".join("      " + x for x in fh.readlines()[-lines:]))
    return "\n".join(out)
