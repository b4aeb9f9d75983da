# SPDX-License-Identifier: Apache-2.0
"""``slurm-gpu simulate --replay-in-lab`` / ``--replay-from``: the validation against real Slurm.

The trace is routed by the policy's classifier and compressed (:func:`slurm_gpu.sim.validate.compress`);
each job is submitted to the lab at its compressed submit time as the lab user, as a ``sleep`` of its
compressed run time (``sbatch -p PART -q QOS -A ACCOUNT -t MIN -N NODES --gres=gpu:TYPE:N``); when
all have ended, ``sacct -D`` (every run of a requeued job) gives the real submit, start and end times,
which are written to a record file. The compressed trace, with the real submit times, is then
simulated with the lab's parameters (:func:`~slurm_gpu.sim.validate.lab_params`), and the start order
and start times are compared. ``--replay-from RECORD`` does the comparison again without the lab.

Every Slurm call goes through :func:`slurm_gpu.adapters.slurm.run_slurm`; sacct's rows are read by the
one sacct reader, :func:`slurm_gpu.sim.traces.read_sacct`.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from slurm_gpu.csv_cells import row as csv_row
from slurm_gpu.csv_cells import unquote
from slurm_gpu.errors import SlurmGpuError, UsageError
from slurm_gpu.plain import NamedTuple
from slurm_gpu.sim.params import Params
from slurm_gpu.sim.validate import Comparison, LabTiming, Replayed

RECORD_COLUMNS = ("job_id", "trace_job_id", "submit", "start", "end", "partition", "nodes", "state", "runs",
                  "submit_ms", "start_ms", "end_ms", "started_by")
OLD_RECORD_COLUMNS = RECORD_COLUMNS[:9]  # records written before slurmctld's log was read
MS_RECORD_COLUMNS = RECORD_COLUMNS[:12]  # and before the pass that started each job was
CTLD_LOG_LIMIT = 256 << 20  # bytes of slurmctld's log a replay reads (its own lines: ~250 bytes a job)
SACCT_FORMAT = "JobIDRaw,Submit,Start,End,Partition,QOS,State,NNodes,AllocTRES"


class RealJob(NamedTuple):
    job_id: str  # Slurm's
    trace_job_id: str
    submit: int  # seconds from the replay's time 0
    start: int | None  # the first run's
    end: int | None  # the last run's
    partition: str
    nodes: int | None
    state: str
    runs: int
    # the same times from slurmctld's log, to the millisecond (sim/ctld_log.py); None where not logged
    submit_ms: float | None = None
    start_ms: float | None = None
    end_ms: float | None = None
    started_by: str = ""  # "main" or "backfill": the pass of slurmctld that started the first run (the log's)


def routed(policy_path: str, trace_path: str, factor: float, fmt: str | None = None) -> list[Replayed]:
    from slurm_gpu.policy.load import load_policy
    from slurm_gpu.sim.routing import Router
    from slurm_gpu.sim.run_files import load_trace
    from slurm_gpu.sim.validate import compress

    policy = load_policy(policy_path)
    trace = load_trace(trace_path, fmt)
    router = Router(policy)
    jobs, _rejected = compress(trace, [router.route(j) for j in trace.jobs], factor)
    return jobs


def sbatch_argv(r: Replayed) -> list[str]:
    route, job = r.route, r.job
    argv = ["sbatch", "--parsable", f"--job-name=replay-{job.job_id}", "--output=/dev/null", "--chdir=/tmp",
            f"--partition={route.partition}", f"--nodes={route.nodes}"]
    if route.qos:
        argv.append(f"--qos={route.qos}")
    if job.account:
        argv.append(f"--account={job.account}")
    if route.time_limit_s is not None:
        argv.append(f"--time={route.time_limit_s // 60}")
    if route.gpus_per_node:
        argv.append(f"--gres=gpu:{route.gpu_type}:{route.gpus_per_node}" if route.gpu_type
                    else f"--gres=gpu:{route.gpus_per_node}")
    argv.append(f"--wrap=sleep {job.duration}")
    return argv


def submit_all(jobs: list[Replayed], user: str, env: dict[str, str],
               say: Callable[[str], None]) -> tuple[float, dict[str, str]]:
    """Submit each job at its compressed submit time; returns time 0 (epoch) and Slurm id -> trace id."""
    from slurm_gpu.adapters.slurm import run_slurm
    from slurm_gpu.adapters.slurm.runner import failure
    from slurm_gpu.slurm.records import parse_parsable

    user_env = {"SLURM_CONF": env.get("SLURM_CONF", "/etc/slurm/slurm.conf")}
    t0 = float(int(time.time()) + 2)
    ids: dict[str, str] = {}
    late = 0.0
    for r in sorted(jobs, key=lambda r: (r.job.submit, r.job.line)):
        wait = t0 + r.job.submit - time.time()
        if wait > 0:
            time.sleep(wait)
        late = max(late, -wait)
        argv = sbatch_argv(r)
        proc = run_slurm(argv, env=env, user=user, user_env=user_env, timeout_s=30)
        got = parse_parsable(proc.stdout) if proc.returncode == 0 else None
        if got is None:
            raise failure(f"sbatch of trace job {r.job.job_id}", proc.stderr or proc.stdout, env, proc.returncode)
        ids[str(got.job_id)] = r.job.job_id
    say(f"submitted {len(ids)} jobs (the latest {late:.1f} s after its time)")
    return t0, ids


def wait_all(ids: dict[str, str], env: dict[str, str], timeout_s: float, say: Callable[[str], None]) -> None:
    """Poll squeue until none of the jobs is pending or running; cancel them after ``timeout_s``."""
    from slurm_gpu.adapters.slurm import run_slurm

    deadline = time.time() + timeout_s
    joined = ",".join(ids)
    while True:
        proc = run_slurm(["squeue", "-h", "-j", joined, "-o", "%i"], env=env, timeout_s=30)
        left = [x for x in proc.stdout.split() if x in ids] if proc.returncode == 0 else list(ids)
        if not left:
            return
        if time.time() > deadline:
            run_slurm(["scancel", *left], env=env, timeout_s=30)
            raise SlurmGpuError(f"{len(left)} replayed jobs still queued after {timeout_s:g} s; cancelled them")
        say(f"{len(left)} jobs pending or running")
        time.sleep(10)


def read_real(ids: dict[str, str], t0: float, env: dict[str, str]) -> list[RealJob]:
    """sacct -D (every run of a requeued job) for the jobs, as times from ``t0``."""
    from slurm_gpu.adapters.slurm import run_slurm
    from slurm_gpu.sim.traces import read_sacct

    env = env | {"SLURM_TIME_FORMAT": "%s"}
    argv = ["sacct", "-X", "-D", "-P", "-j", ",".join(ids), f"--format={SACCT_FORMAT}"]
    for _ in range(10):  # slurmdbd may trail slurmctld by a few seconds
        proc = run_slurm(argv, env=env, timeout_s=60, check=True)
        rows = read_sacct(proc.stdout.splitlines(), "sacct").jobs
        runs: dict[str, list[Any]] = {}
        for row in rows:
            runs.setdefault(row.job_id, []).append(row)
        if set(runs) >= set(ids) and all(r.start is not None for rs in runs.values() for r in rs):
            break
        time.sleep(3)
    out = []
    for jid, rs in sorted(runs.items(), key=lambda kv: int(kv[0])):
        if jid not in ids:
            continue
        first = min(rs, key=lambda r: r.start or 0)
        last = max(rs, key=lambda r: r.start or 0)
        start = None if first.start is None else int(first.start - t0)
        end = None if last.start is None else int(last.start + last.duration - t0)
        out.append(RealJob(jid, ids[jid], int(first.submit - t0), start, end, last.partition or "", last.nodes,
                           last.state or "", len(rs)))
    return out


def record_text(real: list[RealJob], header: list[str]) -> str:
    out = io.StringIO()
    for line in header:
        out.write(f"# {line}\n")
    w = csv.writer(out, lineterminator="\n")
    w.writerow(RECORD_COLUMNS)
    for r in real:
        w.writerow(csv_row("" if v is None else v for v in r))
    return out.getvalue()


def _older_record(params: Params, given: dict[str, Any], text: str) -> Params:
    """A record written before the backfill reservation fields: it came from a lab, so Slurm's own
    semantics apply (whole nodes, bf_resolution unset = 60 s, as ``params_from_conf`` maps a lab's
    slurm.conf now), and time 0 is in its header (``from YYYY-mm-ddTHH:MM:SSZ``, UTC)."""
    if "bf_whole_nodes" not in given:
        params = params._replace(bf_whole_nodes=True, bf_resolution_s=60)
    if "clock0_s" not in given:
        import re

        when = re.search(r"from ([0-9]{4}-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z)", text)
        if when:
            params = params._replace(clock0_s=int(datetime.strptime(when[1], "%Y-%m-%dT%H:%M:%SZ")
                                                  .replace(tzinfo=UTC).timestamp()))
    return params


def read_record(path: str) -> tuple[list[RealJob], Params | None]:
    """A record file written by :func:`record_text` (``#`` lines are its header; the line
    ``# params: {...}`` gives the simulator's parameters of the lab it was recorded in)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"replay record {path!r}: {exc}") from None
    params = None
    for line in text.splitlines():
        if line.startswith("# params: "):
            try:
                given = json.loads(line.removeprefix("# params: "))
                # a field of another version of the model (none is a lab's slurm.conf value) is left out
                given = {k: v for k, v in given.items() if k in Params._fields}
                params = Params(**given)
            except (ValueError, TypeError) as exc:
                raise SlurmGpuError(f"{path}: bad params line: {exc}") from None
            params = _older_record(params, given, text)
    rows = csv.reader(line for line in text.splitlines() if not line.startswith("#"))
    head = next(rows, None)
    columns = tuple(head or ())
    if columns not in (RECORD_COLUMNS, MS_RECORD_COLUMNS, OLD_RECORD_COLUMNS):
        raise SlurmGpuError(f"{path}:1: expected the columns {','.join(RECORD_COLUMNS)}")
    out = []
    for n, row in enumerate(rows, 2):
        try:
            v = dict(zip(columns, map(unquote, row), strict=True))
            ms = [float(v[k]) if v.get(k) else None for k in ("submit_ms", "start_ms", "end_ms")]
            if not all(x is None or math.isfinite(x) for x in ms):
                raise ValueError("a time that is not a number")
            if v.get("started_by", "") not in ("", "main", "backfill"):
                raise ValueError(f"started_by {v['started_by']!r} is not main or backfill")
            out.append(RealJob(v["job_id"], v["trace_job_id"], int(v["submit"]),
                               int(v["start"]) if v["start"] else None, int(v["end"]) if v["end"] else None,
                               v["partition"], int(v["nodes"]) if v["nodes"] else None, v["state"], int(v["runs"]),
                               ms[0], ms[1], ms[2], v.get("started_by", "")))
        except ValueError as exc:
            raise SlurmGpuError(f"{path}:{n}: bad record row: {exc}") from None
    return out, params


def lab_timing_of(jobs: list[Replayed], real: list[RealJob], params: Params) -> LabTiming:
    """The lab's timing measured from a record: in milliseconds from the jobs slurmctld's log timed,
    where the record has any; else in tenths from sacct's whole seconds."""
    from slurm_gpu.sim.validate import TICKS_MS, lab_timing

    sleeps = {r.job.job_id: r.job.duration for r in jobs}
    fine = [r for r in real if r.submit_ms is not None and r.start_ms is not None]
    if not fine:
        return lab_timing([(r.submit, r.start, r.end, sleeps.get(r.trace_job_id, 0), r.runs) for r in real])
    return lab_timing([(r.submit_ms, r.start_ms, r.end_ms, sleeps.get(r.trace_job_id, 0), r.runs)
                       for r in fine if r.submit_ms is not None], TICKS_MS,
                      [r.start_ms for r in fine if r.started_by == "backfill" and r.start_ms is not None],
                      params.bf_interval_s)


def compare_with(jobs: list[Replayed], real: list[RealJob], policy_path: str,
                 params: Params) -> tuple[Comparison, list[tuple[str, int, int | None, float | None, str]]]:
    """Simulate the compressed jobs with the real submit times and the lab's parameters; compare.

    A run's length is the job's, not the scheduler's: where slurmctld's log gave a job's start and end
    to the millisecond (one run), the simulated run lasts as long as the real one did; otherwise its
    sleep plus the lab's mean overhead. Submissions likewise. Every start is the simulator's own."""
    from slurm_gpu.policy.load import load_policy
    from slurm_gpu.sim.engine import simulate
    from slurm_gpu.sim.traces import Trace
    from slurm_gpu.sim.validate import TICKS, FixedRoutes, compare, in_ticks

    by_trace = {r.trace_job_id: r for r in real}
    timing = lab_timing_of(jobs, real, params)
    t = timing.ticks  # tenths or milliseconds: the lab's per-run overhead and release are fractions of a second

    def ticks(v: int | None) -> int | None:
        return None if v is None else v * t

    def submit(r: RealJob) -> int:
        return r.submit * t if r.submit_ms is None else round(r.submit_ms * t)

    def run_length(r: Replayed) -> int:
        got = by_trace[r.job.job_id]
        if got.runs == 1 and got.start_ms is not None and got.end_ms is not None:
            return max(1, round((got.end_ms - got.start_ms) * t))
        return r.job.duration * t + timing.overhead

    replayed = [r._replace(job=r.job._replace(submit=submit(by_trace[r.job.job_id]), duration=run_length(r),
                                              time_limit_s=ticks(r.job.time_limit_s)),
                           route=r.route._replace(time_limit_s=ticks(r.route.time_limit_s)))
                for r in jobs if r.job.job_id in by_trace]
    policy = load_policy(policy_path)
    policy = dataclasses.replace(policy, partitions=tuple(dataclasses.replace(p, grace_time_s=p.grace_time_s * t)
                                                          for p in policy.partitions))
    result = simulate(Trace(tuple(r.job for r in replayed), "epoch"), policy, in_ticks(params, timing),
                      FixedRoutes(replayed))
    # against slurmctld's milliseconds, to the millisecond; against sacct's whole seconds (truncated), the
    # simulated starts truncated too
    fine = t != TICKS
    sim: dict[str, float | None] = {j.job_id: None if j.first_start is None else
                                    round(j.first_start / t, 3) if fine else j.first_start // t for j in result.jobs}
    cmp = compare(truth_of(real), sim)
    rows = [(k, by_trace[k].submit, by_trace[k].start, sim.get(k), by_trace[k].partition) for k in sorted(by_trace)]
    return cmp, rows


def truth_of(real: list[RealJob], ms: bool = True) -> dict[str, tuple[float, float]]:
    """Trace job id -> the real (submit, first start): slurmctld's milliseconds where the record has
    them (and ``ms``), else sacct's seconds."""
    return {r.trace_job_id: (r.submit, r.start) if not ms or r.start_ms is None or r.submit_ms is None
            else (r.submit_ms, r.start_ms) for r in real if r.start is not None}


def report(cmp: Comparison) -> str:
    def f(v: float | None, spec: str) -> str:
        return "-" if v is None else format(v, spec)

    return (f"jobs compared: {cmp.jobs}" + (f" (started in one only: {', '.join(cmp.missing)})" if cmp.missing else "")
            + f"\nKendall tau-b of the start order (simulated vs real): {f(cmp.tau_b, '.3f')}"
            + f"\nmedian |start error|: {f(cmp.median_abs_error_s, '.1f')} s; mean real wait: "
            + f"{f(cmp.mean_wait_s, '.1f')} s; error / mean wait: {f(cmp.error_of_wait, '.3f')}\n")


def set_lab_scheduler(env: dict[str, str], say: Callable[[str], None]) -> None:
    """Write the one table of scheduler parameters (``params.LAB_SCHEDULER_PARAMETERS``) into the lab's
    slurm.conf (SLURM_CONF) when its SchedulerParameters line differs, and ``scontrol reconfigure``."""
    from slurm_gpu.adapters.fs import write_file
    from slurm_gpu.adapters.slurm import run_slurm
    from slurm_gpu.sim.validate import with_lab_scheduler
    from slurm_gpu.slurm.scheduler_params import lab_scheduler_line

    conf = env.get("SLURM_CONF", "/etc/slurm/slurm.conf")
    try:
        text = Path(conf).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read slurm.conf {conf!r}: {exc}") from None
    new = with_lab_scheduler(text)
    if new is None:
        return
    try:
        write_file(conf, new.encode("utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot write slurm.conf {conf!r}: {exc}") from None
    run_slurm(["scontrol", "reconfigure"], env=env, timeout_s=60, check=True)
    want = lab_scheduler_line().partition("=")[2]
    for _ in range(30):
        shown = run_slurm(["scontrol", "show", "config"], env=env, timeout_s=30).stdout
        if any(line.split("=", 1)[-1].strip() == want for line in shown.splitlines()
               if line.strip().startswith("SchedulerParameters")):
            break
        time.sleep(1)
    else:
        raise SlurmGpuError(f"the lab did not take {lab_scheduler_line()} after scontrol reconfigure")
    say(f"wrote {lab_scheduler_line()} into {conf} and reconfigured the lab")


class CtldLog(NamedTuple):
    """Where slurmctld writes its log, and how far it was when the replay began."""

    directory: str
    name: str
    owner: int  # SlurmUser's uid: the log is refused when anyone else owns it
    size: int


def ctld_log(env: dict[str, str]) -> CtldLog | None:
    """The lab's slurmctld log (``SlurmctldLogFile`` of ``scontrol show config``) and its size now; None
    when there is none or it cannot be read (the replay then keeps sacct's whole seconds)."""
    import re

    from slurm_gpu.adapters.fs import LINKS, open_dir
    from slurm_gpu.adapters.slurm import run_slurm

    shown = run_slurm(["scontrol", "show", "config"], env=env, timeout_s=30).stdout
    conf = {k.strip(): v.strip() for k, _eq, v in (line.partition("=") for line in shown.splitlines()) if _eq}
    path, user = conf.get("SlurmctldLogFile", ""), re.search(r"\(([0-9]+)\)", conf.get("SlurmUser", ""))
    if not path.startswith("/") or user is None:
        return None
    directory, _slash, name = path.rpartition("/")
    try:
        fd = open_dir(directory or "/", trust=LINKS, follow_last=False)
        try:
            size = os.stat(name, dir_fd=fd, follow_symlinks=False).st_size
        finally:
            os.close(fd)
    except (OSError, ValueError):
        return None
    return CtldLog(directory or "/", name, int(user[1]), size)


def with_ms(real: list[RealJob], log: CtldLog | None, t0: float) -> list[RealJob]:
    """``real`` with the times slurmctld logged since the replay began, where they agree with sacct's
    (sim/ctld_log.py); unchanged when the log cannot be read."""
    from slurm_gpu.adapters.fs import LINKS, open_dir, read_capped
    from slurm_gpu.sim.ctld_log import aligned, events

    if log is None:
        return real
    try:
        fd = open_dir(log.directory, trust=LINKS, follow_last=False)
        try:
            data = read_capped(fd, log.name, limit=CTLD_LOG_LIMIT, uid=log.owner, one_link=True, offset=log.size)
        finally:
            os.close(fd)
    except (OSError, ValueError):
        return real
    whole = {r.job_id: (r.submit, r.start, r.end) for r in real}
    fine = aligned(events((data or b"").decode("utf-8", "replace").splitlines(), whole), whole, int(t0))
    return [r._replace(submit_ms=f.submit, start_ms=f.start, end_ms=f.end, started_by=f.started_by)
            if (f := fine.get(r.job_id)) else r for r in real]


def lab_params(env: dict[str, str]) -> Params:
    """The simulator's parameters from the lab's slurm.conf (SLURM_CONF)."""
    from slurm_gpu.sim.validate import params_from_conf

    conf = env.get("SLURM_CONF", "/etc/slurm/slurm.conf")
    try:
        return params_from_conf(Path(conf).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read slurm.conf {conf!r}: {exc}") from None


def replay_in_lab(policy_path: str, trace_path: str, out_dir: str, factor: float, fmt: str | None = None,
                  user: str = "labuser", timeout_s: float = 1800, say: Callable[[str], None] = print,
                  env: dict[str, str] | None = None, as_json: bool = False) -> str:
    from slurm_gpu.adapters.slurm import run_slurm
    from slurm_gpu.sim.run_files import write_files

    jobs = routed(policy_path, trace_path, factor, fmt)
    write_files(Path(out_dir), {})  # an output directory that cannot be written fails now, not after the run
    env = dict(os.environ if env is None else env)
    set_lab_scheduler(env, say)
    params = lab_params(env)
    version = run_slurm(["sinfo", "-V"], env=env, timeout_s=15, check=True).stdout.split()[-1]
    log = ctld_log(env)
    began = time.time()
    t0, ids = submit_all(jobs, user, env, say)
    wait_all(ids, env, timeout_s, say)
    real = with_ms(read_real(ids, t0, env), log, t0)
    took = time.time() - began
    timed = sum(r.start_ms is not None for r in real)
    from slurm_gpu.sim.validate import release_gap

    params = params._replace(release_s=release_gap([(r.submit, r.start, r.end) for r in real
                                                    if r.start is not None and r.end is not None]),
                             clock0_s=int(t0))
    header = [f"slurm-gpu simulate --replay-in-lab: Slurm {version}, {len(real)} jobs of {trace_path}",
              f"compressed {factor:g}x, submitted as {user} from {datetime.fromtimestamp(t0, UTC):%Y-%m-%dT%H:%M:%SZ}",
              f"(time 0); the real run took {took:.0f} s; times are seconds from time 0 (sacct -X -D); the _ms",
              f"columns are slurmctld's log's, to the millisecond, for {timed} of the {len(real)} jobs",
              "the simulator's parameters (below): the lab's slurm.conf's; release_s measured in this run",
              f"params: {json.dumps(params._asdict())}"]
    record = record_text(real, header)
    return _finish(jobs, real, policy_path, out_dir, record, f"real run: {took:.0f} s, Slurm {version}\n", params,
                   as_json=as_json)


def replay_from(policy_path: str, trace_path: str, out_dir: str, factor: float, record_paths: str | list[str],
                fmt: str | None = None, as_json: bool = False) -> str:
    """The comparison with the first record; with more records, each further record against the first
    one too (real against real), per class."""
    jobs = routed(policy_path, trace_path, factor, fmt)
    paths = [record_paths] if isinstance(record_paths, str) else list(record_paths)
    records = []
    for path in paths:
        real, params = read_record(path)
        if params is None:
            raise SlurmGpuError(f"{path}: no '# params: ' line (the lab's scheduler parameters)")
        records.append((real, params))
    (real, params), others = records[0], [r for r, _p in records[1:]]
    return _finish(jobs, real, policy_path, out_dir, None, "", params, others, as_json)


def classes_of(jobs: list[Replayed]) -> dict[str, tuple[str, ...]]:
    """Trace job id -> its class labels for the per-class figures: its partition and its QOS."""
    return {r.job.job_id: (f"partition={r.route.partition}", f"qos={r.route.qos or '-'}") for r in jobs}


def _figures(cmp: Comparison) -> dict[str, Any]:
    return {"jobs": cmp.jobs, "tau_b": cmp.tau_b, "median_abs_error_s": cmp.median_abs_error_s,
            "mean_wait_s": cmp.mean_wait_s, "error_of_wait": cmp.error_of_wait}


def class_table(sim: dict[str, Comparison], rvr: dict[str, Comparison] | None) -> str:
    """The per-class figures as a text table (simulated vs real, and real vs real where given)."""
    def f(v: float | None, spec: str) -> str:
        return "-" if v is None else format(v, spec)

    head = f"{'class':<22} {'jobs':>4} {'tau-b':>6} {'err s':>7} {'wait s':>7} {'err/wait':>8}"
    if rvr is not None:
        head += f" | real-vs-real: {'tau-b':>6} {'err s':>7} {'err/wait':>8}"
    lines = ["per class (simulated against real):", head]
    for label, c in sim.items():
        line = (f"{label:<22} {c.jobs:>4} {f(c.tau_b, '.3f'):>6} {f(c.median_abs_error_s, '.1f'):>7} "
                f"{f(c.mean_wait_s, '.1f'):>7} {f(c.error_of_wait, '.3f'):>8}")
        if rvr is not None:
            r = rvr.get(label)
            line += (f" | {'':>13} {f(r.tau_b if r else None, '.3f'):>6} "
                     f"{f(r.median_abs_error_s if r else None, '.1f'):>7} "
                     f"{f(r.error_of_wait if r else None, '.3f'):>8}")
        lines.append(line)
    return "\n".join(lines) + "\n"


def _finish(jobs: list[Replayed], real: list[RealJob], policy_path: str, out_dir: str, record: str | None,
            head: str, params: Params, others: list[list[RealJob]] | None = None, as_json: bool = False) -> str:
    from slurm_gpu.sim.run_files import write_files
    from slurm_gpu.sim.validate import compare_classes

    if record is not None:  # first: the real run is not lost if the comparison fails
        write_files(Path(out_dir), {"lab-replay.csv": record})
    cmp, rows = compare_with(jobs, real, policy_path, params)
    classes = classes_of(jobs)
    truth = truth_of(real)
    sim_starts = {k: s for k, _sub, _real, s, _part in rows}
    by_class = compare_classes(truth, sim_starts, classes)
    rvr: dict[str, Comparison] | None = None
    if others:
        # two records to the millisecond are compared so; any other pair in sacct's whole seconds
        ms = all(r.start_ms is not None for r in real + others[0] if r.start is not None)
        second = {k: start for k, (_sub, start) in truth_of(others[0], ms).items()}
        rvr = compare_classes(truth_of(real, ms), second, classes)
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(("trace_job_id", "submit", "real_start", "sim_start", "partition"))
    for row in rows:
        w.writerow(csv_row("" if v is None else v for v in row))
    timing = lab_timing_of(jobs, real, params)
    t = timing.ticks
    fine = sum(r.start_ms is not None for r in real)
    text = (head + report(cmp)
            + f"lab timing (measured from the record; simulated in 1/{t} s): a run lasts its sleep + "
            + f"{timing.overhead / t:.{len(str(t)) - 1}f} s; the main pass after an end runs "
            + f"{timing.release / t:.{len(str(t)) - 1}f} s later"
            + (f", after a submission {timing.submit_delay / t:.3f} s later" if fine else "") + "\n"
            + f"times to the millisecond (slurmctld's log): {fine} of {len(real)} jobs"
            + (" (each of them runs as long as it did)\n" if fine else "\n")
            + class_table(by_class, rvr))
    doc: dict[str, Any] = {"simulated_vs_real": {k: _figures(v) for k, v in by_class.items()},
                           "lab_timing_s": {"run_overhead": timing.overhead / t, "sched_delay": timing.release / t,
                                            "submit_delay": timing.submit_delay / t},
                           "jobs_timed_to_ms": fine,
                           "missing": list(cmp.missing), "params": params._asdict()}
    if rvr is not None:
        doc["real_vs_real"] = {k: _figures(v) for k, v in rvr.items()}
    as_text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    files = {"replay-compare.csv": out.getvalue(), "replay-summary.txt": text, "replay-summary.json": as_text}
    write_files(Path(out_dir), files)
    return as_text if as_json else text
