# SPDX-License-Identifier: Apache-2.0
"""A burst of submissions into a lab (issue 22, R5): gpusub and plain sbatch mixed, from concurrent
submitters, every job accounted for.

1. :func:`job_mix`: N real-shaped requests over the lab policy's classes (typed and untyped GPU jobs,
   multi-node and per-task GPUs, grant accounts, interactive-sized, CPU-only, spot, and a few the policy
   refuses), each for ``gpusub`` or plain ``sbatch``, tiny commands (``true``, ``hostname``). Seeded:
   the same N and seed give the same burst.
2. :func:`predict`: each job's outcome from the Python classifier, ``gpusub --explain --json`` as the
   lab user (accepted or refused with which message, partition, QOS, GPUs), before anything is
   submitted.
3. :func:`submit`: the jobs split into quarters (every k-th job), one process of the lab user per
   quarter, all at once, each running its ``gpusub --parsable`` / ``sbatch --parsable`` calls back to
   back and timing only them.
4. :func:`wait_final` (squeue, slurmctld's records) and :func:`accounting` (sacct, slurmdbd's) read what
   Slurm recorded; :func:`node_problems` the nodes that are DRAIN/DOWN/FAIL or not responding;
   :func:`hooked_jobs` the job ids the node hooks logged a Prolog and an Epilog for.
5. :func:`tally` (pure) joins them: submitted, refused, completed, and every job that was lost,
   refused or accepted against the prediction, refused with another message, landed elsewhere, never
   completed, is missing from accounting, or is a GPU job the hooks never saw.

Used by tests/lab/test_burst.py and benchmarks/bench_burst.py (docs/lab.md, "A burst of submissions").
"""

from __future__ import annotations

import json
import os
import pwd
import random
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import field
from typing import Any

from slurm_gpu.lab import clients
from slurm_gpu.plain import Record, record
from slurm_gpu.slurm.records import parse_parsable

SUBMITTERS = 4
BOTH = ("gpusub", "sbatch")
COMMANDS = ("true", "hostname")
GOOD_END = "COMPLETED"


@record
class Shape(Record):
    """One kind of request: its share of the burst, the tools that submit it, its variants."""

    kind: str
    weight: float
    tools: tuple[str, ...]
    variants: tuple[tuple[str, ...], ...]


# Over examples/policies/university.yaml (the lab policy); where each lands is the classifier's to say.
SHAPES: tuple[Shape, ...] = (
    Shape("typed GPU", 14, BOTH, (("--gpus=h100:1", "-t", "1:00:00"), ("--gpus=h100:2", "-t", "2:00:00"),
                                  ("--gpus=h100:4", "-t", "6:00:00"), ("--gpus=h100:8", "-t", "12:00:00"),
                                  ("--gpus=a100:1", "-t", "3:00:00"), ("--gpus=a100:2", "-t", "90"))),
    Shape("untyped GPU", 14, BOTH, (("--gpus=1", "-t", "45"), ("--gpus=2", "-t", "1:30:00"),
                                    ("--gpus=4", "-t", "1:00:00"), ("--gres=gpu:1", "-t", "2:00:00"),
                                    ("--gres=gpu:2", "-t", "2:00:00"))),
    Shape("multi-GPU layout", 6, BOTH, (("-N", "2", "--gpus-per-node=2", "-t", "1:00:00"),
                                        ("-n", "4", "--ntasks-per-gpu=2", "-t", "1:00:00"),
                                        ("--gpus-per-task=1", "-n", "3", "-t", "1:00:00"))),
    Shape("grant account", 7, BOTH, (("-A", "hpc-priority", "--gpus=h100:4"),
                                     ("-A", "nsf-ai-grant", "--gpus=h100:2", "-t", "8:00:00"),
                                     ("--qos=high", "--gpus=h100:9", "-t", "1:00:00"))),
    Shape("interactive-sized", 8, BOTH, (("--gpus=1", "-t", "20"), ("--gpus=h100:2", "-t", "30"),
                                         ("-p", "mig", "--gpus=a100:1", "-t", "30"))),
    Shape("CPU-only", 16, BOTH, (("-t", "10"), ("-n", "4", "-t", "15"), ("-c", "8", "-t", "25"))),
    Shape("spot", 8, ("sbatch",), (("-p", "spot", "--gpus=a100:1"), ("-p", "spot", "--gpus=h100:2", "-t", "1:00:00"))),
    Shape("spot", 8, ("gpusub",), (("--class", "spot", "--gpus=h100:1", "-t", "30"),
                                   ("--class", "spot", "--gpus=h100:4", "-t", "2:00:00"))),
    Shape("out of policy", 5, BOTH, ((), ("-n", "2"), ("--gpus=h100:16",), ("--gres=gpu:v100:1",),
                                     ("--qos=spot", "--gpus=1"), ("--gpus=h100:1", "-t", "3-00:00:00"))),
)


@record
class BurstJob(Record):
    index: int
    tool: str  # "gpusub" | "sbatch"
    kind: str
    options: tuple[str, ...]
    command: str

    def argv(self, gpusub: str) -> list[str]:
        return [gpusub if self.tool == "gpusub" else "sbatch", "--parsable", *self.options, f"--wrap={self.command}"]

    def label(self) -> str:
        return f"#{self.index} {self.tool} {' '.join(self.options) or '(no options)'}"


@record
class Prediction(Record):
    accepted: bool
    partition: str | None
    qos: str | None
    message: str | None  # the policy's message when refused
    gres: str | None  # the GPUs it asks for (``gpu:h100:2``); None for a CPU-only job


@record
class Submission(Record):
    index: int
    rc: int
    job_id: int | None
    stderr: str
    seconds: float


@record
class JobSeen(Record):
    """One job as the queue or accounting saw it."""

    job_id: int
    partition: str
    qos: str
    state: str
    exit_code: str = ""  # sacct's ExitCode (``0:12``: killed by signal 12)


@record
class Burst(Record):
    """What the submitters did: per job, and the burst's wall time (first start to last end)."""

    submissions: tuple[Submission, ...]
    wall_s: float

    @property
    def rate(self) -> float:
        return len(self.submissions) / self.wall_s if self.wall_s > 0 else 0.0


# What can be wrong with one job, by kind (Tally.problems), in the order tally() looks.
PROBLEMS = {
    "unsubmitted": "never submitted",
    "refused": "refused, predicted accepted",
    "no-id": "exit 0 but no job id",
    "message": "refused without the policy's message",
    "accepted": "accepted, predicted refused",
    "lost": "job id unknown to squeue",
    "unfinished": "never reached a final state",
    "preempted": "preempted as it started, killed by the stop signal (FAILED, ExitCode 0:N), not requeued",
    "failed": "ended other than COMPLETED",
    "unrecorded": "missing from accounting or another state there (sacct)",
    "unhooked": "GPU job without a Prolog and Epilog logged by the node hooks",
}


@record
class Problem(Record):
    kind: str  # a key of PROBLEMS
    text: str


@record
class Tally(Record):
    submitted: int  # got a job id
    refused: int  # refused as predicted, with the policy's message
    completed: int
    mismatched: tuple[str, ...]  # partition or QOS other than predicted (squeue or sacct)
    problems: tuple[Problem, ...]  # everything else that is not accounted for
    stuck: tuple[int, ...] = ()  # ids that never reached a final state
    by_place: Mapping[str, int] = field(default_factory=dict)  # "partition/qos" -> completed jobs

    @property
    def ok(self) -> bool:
        return not self.mismatched and not self.problems

    def count(self, kind: str) -> int:
        return sum(1 for p in self.problems if p.kind == kind)


def job_mix(n: int, seed: int = 0, shapes: tuple[Shape, ...] = SHAPES) -> tuple[BurstJob, ...]:
    """N jobs drawn from ``shapes`` by weight (a seeded draw: reproducible), each shape's tool and variant
    drawn alike; the command alternates between ``true`` and ``hostname``."""
    rng = random.Random(seed)
    weights = [s.weight for s in shapes]
    jobs = []
    for i in range(n):
        shape = rng.choices(shapes, weights)[0]
        jobs.append(BurstJob(i, rng.choice(shape.tools), shape.kind, rng.choice(shape.variants), COMMANDS[i % 2]))
    return tuple(jobs)


def predict(jobs: Iterable[BurstJob], slurm_conf: str, *, user: str, gpusub: str, policy_path: str,
            workers: int = SUBMITTERS) -> dict[int, Prediction]:
    """Each job's outcome from the classifier: ``gpusub --explain --json`` with the job's options, run as
    ``user`` (its accounts and groups, as at submission), once per distinct command line."""
    extra = {"GPUSUB_POLICY": policy_path, "HOME": pwd.getpwnam(user).pw_dir, "LANG": "C.UTF-8"}
    jobs = tuple(jobs)
    lines = list(dict.fromkeys(j.options for j in jobs))

    def explain(options: tuple[str, ...]) -> Prediction:
        r = clients.run([gpusub, "--explain", "--json", *options, "--wrap=true"], slurm_conf, user=user,
                        cwd="/", env_extra=extra, timeout_s=120)
        try:
            d = json.loads(r.stdout)
            return Prediction(bool(d["accepted"]), d["partition"], d["qos"], d["message"], d["gres"])
        except (ValueError, KeyError, TypeError):
            raise RuntimeError(f"gpusub --explain --json {' '.join(options)} (exit {r.returncode}): "
                               f"{(r.stderr or r.stdout).strip()[-300:]}") from None

    with ThreadPoolExecutor(max_workers=workers) as pool:
        seen = dict(zip(lines, pool.map(explain, lines), strict=True))
    return {j.index: seen[j.options] for j in jobs}


# Run by the lab user with the system python (standard library only): the command lines of its quarter
# back to back, timing each; prints one JSON object.
SUBMITTER = r"""
import json, os, subprocess, sys, time
env = dict(os.environ, PATH="/usr/bin:/bin")
with open(sys.argv[1], encoding="utf-8") as fh:
    jobs = json.load(fh)
done = []
start = time.time()
for index, argv in jobs:
    t = time.perf_counter()
    try:
        r = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=120,
                           stdin=subprocess.DEVNULL, env=env)
        rc, out, err = r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = 124, "", "no answer within 120 s"
    done.append([index, rc, out, err, time.perf_counter() - t])
json.dump({"start": start, "end": time.time(), "done": done}, sys.stdout)
"""


def submit(jobs: tuple[BurstJob, ...], slurm_conf: str, *, user: str, gpusub: str, policy_path: str,
           workdir: str, spool: str, submitters: int = SUBMITTERS) -> Burst:
    """Every job submitted by ``submitters`` processes of ``user`` at once, each with every k-th job,
    from ``workdir`` (the jobs' output goes there). ``spool``: a directory only root can write, where
    the command lists are handed over."""
    home = pwd.getpwnam(user).pw_dir
    extra = {"GPUSUB_POLICY": policy_path, "HOME": home, "LANG": "C.UTF-8"}
    files = []
    for k in range(submitters):
        path = os.path.join(spool, f"quarter-{k}.json")
        with open(path, "x", encoding="utf-8") as fh:  # a fresh name in root's own directory
            json.dump([[j.index, j.argv(gpusub)] for j in jobs[k::submitters]], fh)
        os.chmod(path, 0o644)
        files.append(path)

    def one(k: int) -> dict[str, Any]:
        r = clients.run(["/usr/bin/python3", "-c", SUBMITTER, files[k]], slurm_conf, user=user, cwd=workdir,
                        env_extra=extra, timeout_s=120 + 125 * len(jobs[k::submitters]))
        try:
            quarter: dict[str, Any] = json.loads(r.stdout)
            return quarter
        except ValueError:
            raise RuntimeError(f"a submitter failed (exit {r.returncode}): {r.stderr.strip()[-400:]}") from None

    with ThreadPoolExecutor(max_workers=submitters) as pool:
        quarters = list(pool.map(one, range(submitters)))
    subs = []
    for q in quarters:
        for index, rc, out, err, took in q["done"]:
            parsed = parse_parsable(out) if rc == 0 else None
            subs.append(Submission(index, rc, parsed.job_id if parsed else None, err, took))
    wall = max(q["end"] for q in quarters) - min(q["start"] for q in quarters)
    return Burst(tuple(sorted(subs, key=lambda s: s.index)), wall)


def _queue(slurm_conf: str, user: str) -> dict[int, tuple[JobSeen, str]]:
    """slurmctld's records of ``user``'s jobs, finished ones included (held MinJobAge): id -> (record, reason).
    The fields read are Slurm's own, no user text."""
    r = clients.run(["squeue", "-h", "-t", "all", "-u", user, "-o", "%i|%P|%q|%T|%r"], slurm_conf, timeout_s=60,
                    check=True)
    out = {}
    for line in r.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 5 and parts[0].isascii() and parts[0].isdigit():
            out[int(parts[0])] = (JobSeen(int(parts[0]), parts[1], parts[2], parts[3]), parts[4])
    return out


def wait_final(slurm_conf: str, user: str, ids: Iterable[int], *, timeout_s: float = 600, stall_s: float = 30,
               say: Callable[[str], None] = lambda _m: None) -> dict[int, JobSeen]:
    """Poll squeue until every one of ``ids`` is in a final state. Stops early when nothing of them runs
    and no state has changed for ``stall_s`` (jobs that can never start: held by a limit the plugin would
    have refused), or after ``timeout_s``. Returns the last record of each id squeue knows."""
    want = set(ids)
    deadline = time.monotonic() + timeout_s
    last_change = time.monotonic()
    before: dict[int, str] = {}
    seen: dict[int, JobSeen] = {}
    while True:
        queue = _queue(slurm_conf, user)
        seen.update({i: rec for i, (rec, _) in queue.items() if i in want})
        states = {i: seen[i].state for i in want if i in seen}
        open_ = [i for i in want if states.get(i) not in clients.FINAL_STATES]
        if not open_:
            return seen
        now = time.monotonic()
        if states != before:
            before, last_change = states, now
            say(f"{len(want) - len(open_)} of {len(want)} final")
        busy = any(states.get(i) in ("RUNNING", "COMPLETING", "CONFIGURING", "REQUEUED") for i in open_)
        if now > deadline or (not busy and now - last_change > stall_s):
            return seen
        time.sleep(1.0)


def _settled(rec: JobSeen | None) -> bool:
    return (rec is not None and rec.state in clients.FINAL_STATES and bool(rec.partition)
            and rec.qos not in ("", "Unknown"))


def accounting(slurm_conf: str, ids: Iterable[int], *, timeout_s: float = 60) -> dict[int, JobSeen]:
    """slurmdbd's records (``sacct -X``: the job's last run) of ``ids``, polled until each is settled or
    ``timeout_s`` passed: slurmdbd takes the records a moment after slurmctld, and for that moment a
    finished job can show no partition and QOS ``Unknown``."""
    want = sorted(set(ids))
    deadline = time.monotonic() + timeout_s
    found: dict[int, JobSeen] = {}
    while True:
        for k in range(0, len(want), 500):
            chunk = [i for i in want[k:k + 500] if not _settled(found.get(i))]
            if not chunk:
                continue
            r = clients.run(["sacct", "-X", "-n", "-P", "-o", "JobIDRaw,Partition,QOS,State,ExitCode", "-j",
                             ",".join(map(str, chunk))], slurm_conf, timeout_s=60, check=True)
            for line in r.stdout.splitlines():
                parts = line.strip().split("|")
                if len(parts) == 5 and parts[0].isascii() and parts[0].isdigit():
                    state = parts[3].split()[0] if parts[3].split() else ""  # "CANCELLED by 0"
                    found[int(parts[0])] = JobSeen(int(parts[0]), parts[1], parts[2], state, parts[4])
        if all(_settled(found.get(i)) for i in want) or time.monotonic() > deadline:
            return found
        time.sleep(1.0)


BAD_NODE = re.compile(r"drain|down|fail|not_responding|maint|reboot|\*")


def node_problems(slurm_conf: str) -> dict[str, str]:
    """Nodes that are DRAIN/DRAINING/DOWN/FAIL/not responding: node -> "state (reason)"."""
    r = clients.run(["sinfo", "-h", "-N", "-o", "%N|%T|%E"], slurm_conf, timeout_s=30, check=True)
    bad = {}
    for line in r.stdout.splitlines():
        node, _, rest = line.strip().partition("|")
        state, _, reason = rest.partition("|")
        if node and BAD_NODE.search(state.lower()):
            bad[node] = f"{state} ({reason})" if reason and reason != "none" else state
    return bad


HOOK_LINE = re.compile(r"^\S+ slurm-gpu-(prolog|epilog)\[[0-9]+\]: job ([0-9]+): ")


def hooked_jobs(lab_dir: str) -> dict[str, set[int]]:
    """Job ids the node hooks logged a Prolog and an Epilog for ($LAB_DIR/node-hooks/log/node-hooks.log;
    the hooks log GPU jobs only): {"prolog": ids, "epilog": ids}."""
    from slurm_gpu.lab.nodehooks import prefix

    seen: dict[str, set[int]] = {"prolog": set(), "epilog": set()}
    try:
        with open(os.path.join(prefix(lab_dir), "log", "node-hooks.log"), encoding="utf-8", errors="replace") as fh:
            for line in fh:
                m = HOOK_LINE.match(line)
                if m:
                    seen[m.group(1)].add(int(m.group(2)))
    except FileNotFoundError:
        pass
    return seen


def preempted(slurm_conf: str, ids: Iterable[int]) -> set[int]:
    """Those of ``ids`` whose slurmctld record carries a PreemptTime (chosen for preemption)."""
    out = set()
    for job_id in ids:
        fields, _ = clients.show_job(slurm_conf, job_id, timeout_s=15)
        if fields.get("PreemptTime", "None") not in ("", "None", "Unknown"):
            out.add(job_id)
    return out


KILLED = re.compile(r"^0:[1-9][0-9]*$")  # sacct ExitCode of a job killed by a signal


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.split()) in " ".join(b.split())


def tally(jobs: tuple[BurstJob, ...], predicted: Mapping[int, Prediction], burst: Burst,
          queue: Mapping[int, JobSeen], acct: Mapping[int, JobSeen],
          hooked: Mapping[str, set[int]] | None = None, preempted: frozenset[int] | set[int] = frozenset()) -> Tally:
    """Every job against its prediction: refused ones with the policy's message and no id; accepted ones
    with an id, COMPLETED, in the predicted partition and QOS in slurmctld's and slurmdbd's records, and
    (``hooked``: the lab runs the node hooks) a GPU job with a Prolog and an Epilog logged. A FAILED job
    killed by a signal while ``preempted`` (ids chosen for preemption) is told apart from other failures:
    a spot job whose preemption came as it started, before its script's trap for the stop signal."""
    by_index = {s.index: s for s in burst.submissions}
    mismatched: list[str] = []
    problems: list[Problem] = []
    stuck: list[int] = []
    places: dict[str, int] = {}
    submitted = refused = completed = 0

    def bad(kind: str, what: str, text: str) -> None:
        problems.append(Problem(kind, f"{what}: {text}"))

    for job in jobs:
        want, sub = predicted[job.index], by_index.get(job.index)
        what = job.label()
        if sub is None:
            bad("unsubmitted", what, "never submitted")
            continue
        err = " ".join(sub.stderr.split())[:200]
        if sub.job_id is None:
            if want.accepted:
                bad("refused", what, f"refused (exit {sub.rc}), predicted {want.partition}/{want.qos}: {err}")
            elif sub.rc == 0:
                bad("no-id", what, "exit 0 but no job id")
            elif not _same_text(want.message or "", sub.stderr):
                bad("message", what, f"refused without the policy's message {want.message!r}: {err}")
            else:
                refused += 1
            continue
        submitted += 1
        job_id = sub.job_id
        if not want.accepted:
            bad("accepted", what, f"accepted as job {job_id}, predicted refused ({want.message})")
        rec, acc = queue.get(job_id), acct.get(job_id)
        if rec is None:
            bad("lost", what, f"job {job_id} lost (not in squeue)")
            continue
        if rec.state not in clients.FINAL_STATES:
            stuck.append(job_id)
            bad("unfinished", what, f"job {job_id} never finished ({rec.state})")
        elif rec.state == "FAILED" and job_id in preempted and acc is not None and KILLED.match(acc.exit_code):
            bad("preempted", what, f"job {job_id} preempted as it started and killed by signal "
                f"{acc.exit_code.partition(':')[2]} (FAILED, ExitCode {acc.exit_code}), not requeued")
        elif rec.state != GOOD_END:
            bad("failed", what, f"job {job_id} ended {rec.state}" + (f" (ExitCode {acc.exit_code})" if acc else ""))
        else:
            completed += 1
            places[f"{rec.partition}/{rec.qos}"] = places.get(f"{rec.partition}/{rec.qos}", 0) + 1
        places_seen = [f"{r.partition}/{r.qos} in {src}" for src, r in (("squeue", rec), ("sacct", acc))
                       if r is not None and (r.partition, r.qos) != (want.partition, want.qos)]
        if want.accepted and places_seen:  # one entry per job, naming each record that differs
            mismatched.append(f"{what}: job {job_id} {', '.join(places_seen)}, predicted {want.partition}/{want.qos}")
        if rec.state in clients.FINAL_STATES:
            if acc is None:
                bad("unrecorded", what, f"job {job_id} missing from accounting (sacct)")
            elif acc.state != rec.state:
                bad("unrecorded", what, f"job {job_id} {acc.state} in sacct, {rec.state} in squeue")
        if hooked is not None and want.gres and rec.state == GOOD_END:
            missing = [h for h in ("prolog", "epilog") if job_id not in hooked.get(h, set())]
            if missing:
                bad("unhooked", what, f"job {job_id}: no {' or '.join(missing)} logged by the node hooks")
    return Tally(submitted, refused, completed, tuple(mismatched), tuple(problems), tuple(stuck), places)


@record
class BurstResult(Record):
    jobs: tuple[BurstJob, ...]
    predicted: Mapping[int, Prediction]
    burst: Burst
    tally: Tally
    drained_before: Mapping[str, str]
    drained_after: Mapping[str, str]
    drain_s: float  # from the end of the burst until every job was final (or the wait gave up)


def combine(results: list[BurstResult]) -> BurstResult:
    """Bursts of parts of one job list (rounds) as one: counts and lists joined, wall and wait times
    added; the nodes unusable before the first, and after any."""
    tallies = [r.tally for r in results]
    places: dict[str, int] = {}
    for t in tallies:
        for k, v in t.by_place.items():
            places[k] = places.get(k, 0) + v
    tally_ = Tally(sum(t.submitted for t in tallies), sum(t.refused for t in tallies),
                   sum(t.completed for t in tallies), tuple(m for t in tallies for m in t.mismatched),
                   tuple(p for t in tallies for p in t.problems), tuple(i for t in tallies for i in t.stuck), places)
    burst_ = Burst(tuple(s for r in results for s in r.burst.submissions), sum(r.burst.wall_s for r in results))
    predicted = {k: v for r in results for k, v in r.predicted.items()}
    return BurstResult(tuple(j for r in results for j in r.jobs), predicted, burst_, tally_,
                       results[0].drained_before, {k: v for r in results for k, v in r.drained_after.items()},
                       sum(r.drain_s for r in results))


def run_burst(lab_dir: str, slurm_conf: str, policy_path: str, user: str, gpusub: str, jobs: tuple[BurstJob, ...],
              *, hooks: bool, submitters: int = SUBMITTERS, timeout_s: float = 900, stall_s: float = 30,
              say: Callable[[str], None] = lambda _m: None) -> BurstResult:
    """Predict, submit, wait, read the records, tally; jobs left unfinished are cancelled at the end."""
    predicted = predict(jobs, slurm_conf, user=user, gpusub=gpusub, policy_path=policy_path, workers=submitters)
    drained_before = node_problems(slurm_conf)
    workdir = os.path.join(lab_dir, "jobs", f"burst-{uuid.uuid4().hex[:8]}")
    os.mkdir(workdir)
    shutil.chown(workdir, user)
    spool = tempfile.mkdtemp(prefix="burst-", dir=lab_dir)
    os.chmod(spool, 0o755)
    ids: list[int] = []
    queue: dict[int, JobSeen] = {}
    try:
        say(f"submitting {len(jobs)} jobs from {submitters} submitters")
        burst = submit(jobs, slurm_conf, user=user, gpusub=gpusub, policy_path=policy_path, workdir=workdir,
                       spool=spool, submitters=submitters)
        ids = [s.job_id for s in burst.submissions if s.job_id is not None]
        say(f"{len(burst.submissions)} submissions in {burst.wall_s:.1f} s ({burst.rate:.1f}/s); "
            f"{len(ids)} accepted; waiting for them")
        t = time.monotonic()
        queue = wait_final(slurm_conf, user, ids, timeout_s=timeout_s, stall_s=stall_s, say=say)
        drain_s = time.monotonic() - t
        acct = accounting(slurm_conf, [i for i in ids if queue.get(i) and queue[i].state in clients.FINAL_STATES])
        hooked = hooked_jobs(lab_dir) if hooks else None
        chosen = preempted(slurm_conf, [i for i in ids if queue.get(i) and queue[i].state == "FAILED"])
        result = tally(jobs, predicted, burst, queue, acct, hooked, chosen)
        return BurstResult(jobs, predicted, burst, result, drained_before, node_problems(slurm_conf), drain_s)
    finally:
        shutil.rmtree(spool, ignore_errors=True)
        left = [i for i in ids if i not in queue or queue[i].state not in clients.FINAL_STATES]
        if left:  # whatever never finished
            for k in range(0, len(left), 500):
                clients.run(["scancel", *map(str, left[k:k + 500])], slurm_conf, timeout_s=60)


__all__ = ["SHAPES", "PROBLEMS", "Problem", "Shape", "BurstJob", "Prediction", "Submission", "JobSeen", "Burst",
           "Tally", "BurstResult", "job_mix", "predict", "submit", "wait_final", "accounting", "node_problems",
           "hooked_jobs", "preempted", "tally", "combine", "run_burst", "SUBMITTERS"]
