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
from slurm_gpu.sim.validate import Comparison, Replayed

RECORD_COLUMNS = ("job_id", "trace_job_id", "submit", "start", "end", "partition", "nodes", "state", "runs")
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
    if head is None or tuple(head) != RECORD_COLUMNS:
        raise SlurmGpuError(f"{path}:1: expected the columns {','.join(RECORD_COLUMNS)}")
    out = []
    for n, row in enumerate(rows, 2):
        try:
            v = dict(zip(RECORD_COLUMNS, map(unquote, row), strict=True))
            out.append(RealJob(v["job_id"], v["trace_job_id"], int(v["submit"]),
                               int(v["start"]) if v["start"] else None, int(v["end"]) if v["end"] else None,
                               v["partition"], int(v["nodes"]) if v["nodes"] else None, v["state"], int(v["runs"])))
        except ValueError as exc:
            raise SlurmGpuError(f"{path}:{n}: bad record row: {exc}") from None
    return out, params


def compare_with(jobs: list[Replayed], real: list[RealJob], policy_path: str,
                 params: Params) -> tuple[Comparison, list[tuple[str, int, int | None, int | None, str]]]:
    """Simulate the compressed jobs with the real submit times and the lab's parameters; compare."""
    from slurm_gpu.policy.load import load_policy
    from slurm_gpu.sim.engine import simulate
    from slurm_gpu.sim.traces import Trace
    from slurm_gpu.sim.validate import TICKS, FixedRoutes, compare, in_ticks, lab_timing

    by_trace = {r.trace_job_id: r for r in real}
    sleeps = {r.job.job_id: r.job.duration for r in jobs}
    timing = lab_timing([(r.submit, r.start, r.end, sleeps.get(r.trace_job_id, 0), r.runs) for r in real])
    t = TICKS  # in tenths of a second: the lab's per-run overhead and release are fractions of a second

    def ticks(v: int | None) -> int | None:
        return None if v is None else v * t

    replayed = [r._replace(job=r.job._replace(submit=by_trace[r.job.job_id].submit * t,
                                              duration=r.job.duration * t + timing.overhead,
                                              time_limit_s=ticks(r.job.time_limit_s)),
                           route=r.route._replace(time_limit_s=ticks(r.route.time_limit_s)))
                for r in jobs if r.job.job_id in by_trace]
    policy = load_policy(policy_path)
    policy = dataclasses.replace(policy, partitions=tuple(dataclasses.replace(p, grace_time_s=p.grace_time_s * t)
                                                          for p in policy.partitions))
    result = simulate(Trace(tuple(r.job for r in replayed), "epoch"), policy, in_ticks(params, timing),
                      FixedRoutes(replayed))
    # sacct's whole seconds are truncated: so are the simulated starts
    sim = {j.job_id: None if j.first_start is None else j.first_start // t for j in result.jobs}
    cmp = compare({k: (v.submit, v.start) for k, v in by_trace.items() if v.start is not None}, sim)
    rows = [(k, by_trace[k].submit, by_trace[k].start, sim.get(k), by_trace[k].partition) for k in sorted(by_trace)]
    return cmp, rows


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

    jobs = routed(policy_path, trace_path, factor, fmt)
    env = dict(os.environ if env is None else env)
    set_lab_scheduler(env, say)
    params = lab_params(env)
    version = run_slurm(["sinfo", "-V"], env=env, timeout_s=15, check=True).stdout.split()[-1]
    began = time.time()
    t0, ids = submit_all(jobs, user, env, say)
    wait_all(ids, env, timeout_s, say)
    real = read_real(ids, t0, env)
    took = time.time() - began
    from slurm_gpu.sim.validate import release_gap

    params = params._replace(release_s=release_gap([(r.submit, r.start, r.end) for r in real
                                                    if r.start is not None and r.end is not None]),
                             clock0_s=int(t0))
    header = [f"slurm-gpu simulate --replay-in-lab: Slurm {version}, {len(real)} jobs of {trace_path}",
              f"compressed {factor:g}x, submitted as {user} from {datetime.fromtimestamp(t0, UTC):%Y-%m-%dT%H:%M:%SZ}",
              f"(time 0); the real run took {took:.0f} s; times are seconds from time 0 (sacct -X -D)",
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
    truth = {r.trace_job_id: (r.submit, r.start) for r in real if r.start is not None}
    sim_starts = {k: s for k, _sub, _real, s, _part in rows}
    by_class = compare_classes(truth, sim_starts, classes)
    rvr: dict[str, Comparison] | None = None
    if others:
        second = {r.trace_job_id: r.start for r in others[0]}
        rvr = compare_classes(truth, second, classes)
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(("trace_job_id", "submit", "real_start", "sim_start", "partition"))
    for row in rows:
        w.writerow(csv_row("" if v is None else v for v in row))
    from slurm_gpu.sim.validate import TICKS, lab_timing

    sleeps = {r.job.job_id: r.job.duration for r in jobs}
    timing = lab_timing([(r.submit, r.start, r.end, sleeps.get(r.trace_job_id, 0), r.runs) for r in real])
    text = (head + report(cmp)
            + f"lab timing (measured from the record; simulated in 1/{TICKS} s): a run lasts its sleep + "
            + f"{timing.overhead / TICKS:.1f} s; the main pass after an end runs {timing.release / TICKS:.1f} s later\n"
            + class_table(by_class, rvr))
    doc: dict[str, Any] = {"simulated_vs_real": {k: _figures(v) for k, v in by_class.items()},
                           "lab_timing_s": {"run_overhead": timing.overhead / TICKS,
                                            "sched_delay": timing.release / TICKS},
                           "missing": list(cmp.missing), "params": params._asdict()}
    if rvr is not None:
        doc["real_vs_real"] = {k: _figures(v) for k, v in rvr.items()}
    as_text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    files = {"replay-compare.csv": out.getvalue(), "replay-summary.txt": text, "replay-summary.json": as_text}
    write_files(Path(out_dir), files)
    return as_text if as_json else text
