# SPDX-License-Identifier: Apache-2.0
"""Validation against real Slurm, the pure part (docs/simulate.md "Validation against real Slurm").

- :func:`lab_trace`: the seeded 200-job trace for the lab (the rule is in its docstring);
- :func:`compress`: a routed trace made ``factor`` times faster, with time limits in whole minutes
  (Slurm keeps limits in minutes), routed on the uncompressed jobs (the class depends on the limit);
- :func:`params_from_conf`: the simulator's parameters that match a slurm.conf (the lab's);
- :func:`release_gap`: the lab's release time, measured from a real run;
- :func:`kendall_tau_b` and :func:`compare`: the start order's rank correlation and the per-job
  start-time error between a simulation and a real run.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

from slurm_gpu.digits import ascii_int, is_digits
from slurm_gpu.plain import NamedTuple
from slurm_gpu.sim.params import Params
from slurm_gpu.sim.routing import Route
from slurm_gpu.sim.traces import Trace, TraceJob

LAB_TRACE_COLUMNS = "job_id,user,account,gpu_num,node_num,gpu_type,partition,state,submit_time,duration,time_limit"


def lab_trace(seed: int = 14, jobs: int = 200) -> str:
    """The lab validation trace as CSV text (uncompressed seconds; meant for ``compress(.., 15)``).

    Arrivals: gaps of 15 s x a geometric-like draw (``round(expovariate(1/2.4))``, mean ~36 s). Each job
    draws its kind: 10 % debug (1 GPU, or 2 with p 1/4; 4-10 min; limit 15m), 10 % spot (partition spot,
    1/2/4 GPUs; 5-15 min; limit 45m), 5 % priority (account hpc-priority, 8 GPUs or 16 on two nodes
    with p 2/5; 3-6 min; limit 45m), else production (1/2/4/8 GPUs with weights 55/25/13/7; 3-8 min;
    limit 45m). The GPU type is h100 for 8 and 16 GPUs, else a100 with p 3/10. Durations are multiples
    of 15 s. The policy's classifier decides the class (a 45-minute limit keeps 1-2 GPU jobs out of
    debug)."""
    rng = random.Random(seed)
    rows = [LAB_TRACE_COLUMNS]
    t = 0
    for i in range(1, jobs + 1):
        t += 15 * round(rng.expovariate(1 / 2.4))
        u = rng.random()
        account, partition, limit = "lab", "", "45"
        if u < 0.10:
            gpus, lo, hi, limit = (2 if rng.random() < 0.25 else 1), 4, 10, "15"
        elif u < 0.20:
            gpus, lo, hi, partition = rng.choice((1, 2, 4)), 5, 15, "spot"
        elif u < 0.25:
            gpus, lo, hi, account = (16 if rng.random() < 0.4 else 8), 3, 6, "hpc-priority"
        else:
            gpus, lo, hi = rng.choices((1, 2, 4, 8), (55, 25, 13, 7))[0], 3, 8
        gtype = "h100" if gpus >= 8 or rng.random() >= 0.3 else "a100"
        duration = rng.randrange(lo * 60, hi * 60 + 1, 15)
        nodes = 2 if gpus == 16 else 1
        rows.append(f"r{i},labuser,{account},{gpus},{nodes},{gtype},{partition},COMPLETED,{t},{duration},{limit}")
    return "\n".join(rows) + "\n"


SHAPES = ("debug-cap", "gang", "spot", "array")


def shaped_trace(shape: str, seed: int = 26) -> str:
    """A lab validation trace of one shape (issue 26), as CSV text in uncompressed seconds, meant for
    ``compress(.., 15)`` on the lab policy (examples/policies/university.yaml: 2 x 8 h100 + 4 a100, one
    user). Each replays in about 6 minutes at 15x. Arrivals are gaps of 15 s x ``round(expovariate(1/m))``;
    run times are multiples of 15 s, uniform in the ranges below.

    - ``debug-cap``: many small jobs under the debug QOS's 2 GPUs per user: 40 debug jobs (1 GPU, or 2
      with p 1/3; 2-5 min; limit 15m; a100 with p 1/2) among 40 production jobs (1/2/4/8 GPUs, weights
      50/25/15/10; 3-8 min; limit 45m); m = 3 (80 jobs in ~60 min).
    - ``gang``: a few large jobs: 12 gangs of 16 GPUs on both h100 nodes (account hpc-priority, QOS
      high; 4-8 min), 10 of 8 GPUs (production; 4-8 min), 14 small fillers (1/2 GPUs on a100; 2-6 min);
      all limits 45m; m = 6 (36 jobs in ~55 min).
    - ``spot``: a preemption-heavy mix: 50 % spot (1/2/4/8 GPUs; 5-12 min; limit 45m), 30 % production
      (1/2/4/8; 3-8 min), 20 % priority (8 GPUs, or 16 on two nodes with p 1/3; 3-6 min): batch's tier
      preempts spot (partition_prio); m = 3, 60 jobs.
    - ``array``: 8 arrays of 6-12 identical tasks submitted in the same second (1 GPU, or 2 with p 1/4;
      one time limit per array, 15m (debug) or 45m (production); 2-6 min each), between 16 single
      production jobs (1/2/4/8; 3-8 min); arrays every ~7 min. The replay submits each task as its own
      job (``sbatch`` without ``--array``): the trace's rows are the tasks.
    """
    if shape not in SHAPES:
        raise ValueError(f"shaped_trace: unknown shape {shape!r} (one of {', '.join(SHAPES)})")
    rng = random.Random(f"{shape}-{seed}")
    rows = [LAB_TRACE_COLUMNS]
    t = 0
    n = 0

    def add(gpus: int, lo: int, hi: int, limit: str, account: str = "lab", partition: str = "",
            gtype: str | None = None) -> None:
        nonlocal n
        n += 1
        gtype = gtype or ("h100" if gpus >= 8 or rng.random() >= 0.3 else "a100")
        duration = rng.randrange(lo * 60, hi * 60 + 1, 15)
        nodes = 2 if gpus == 16 else 1
        rows.append(f"{shape[0]}{n},labuser,{account},{gpus},{nodes},{gtype},{partition},COMPLETED,{t},"
                    f"{duration},{limit}")

    def production() -> None:
        add(rng.choices((1, 2, 4, 8), (50, 25, 15, 10))[0], 3, 8, "45")

    if shape == "debug-cap":
        kinds = ["debug"] * 40 + ["prod"] * 40
        rng.shuffle(kinds)
        for kind in kinds:
            t += 15 * round(rng.expovariate(1 / 3))
            if kind == "debug":
                add(2 if rng.random() < 1 / 3 else 1, 2, 5, "15", gtype=rng.choice(("a100", "h100")))
            else:
                production()
    elif shape == "gang":
        kinds = ["gang"] * 12 + ["eight"] * 10 + ["small"] * 14
        rng.shuffle(kinds)
        for kind in kinds:
            t += 15 * round(rng.expovariate(1 / 6))
            if kind == "gang":
                add(16, 4, 8, "45", account="hpc-priority")
            elif kind == "eight":
                add(8, 4, 8, "45")
            else:
                add(rng.choice((1, 2)), 2, 6, "45", gtype="a100")
    elif shape == "spot":
        for _ in range(60):
            t += 15 * round(rng.expovariate(1 / 3))
            u = rng.random()
            if u < 0.5:
                add(rng.choice((1, 2, 4, 8)), 5, 12, "45", partition="spot")
            elif u < 0.8:
                production()
            else:
                add(16 if rng.random() < 1 / 3 else 8, 3, 6, "45", account="hpc-priority")
    else:
        kinds = ["array"] * 8 + ["prod"] * 16
        rng.shuffle(kinds)
        for kind in kinds:
            if kind == "array":
                t += 15 * round(rng.expovariate(1 / 14))
                gpus, limit = (2 if rng.random() < 0.25 else 1), rng.choice(("15", "45"))
                gtype = rng.choice(("a100", "h100"))
                for _ in range(rng.randint(6, 12)):
                    add(gpus, 2, 6, limit, gtype=gtype)
            else:
                t += 15 * round(rng.expovariate(1 / 6))
                production()
    return "\n".join(rows) + "\n"


class Replayed(NamedTuple):
    """One job of a compressed trace: the job as simulated and submitted, and its route."""

    job: TraceJob
    route: Route


def compress(trace: Trace, routes: Sequence[Route | str], factor: float) -> tuple[list[Replayed], list[str]]:
    """The routed jobs ``factor`` times faster: submit times from the first submit and run times divided
    by ``factor`` (rounded to seconds; at least 1 s), time limits divided and rounded up to whole
    minutes. Returns the jobs and the ids of the rejected ones."""
    t0 = min((j.submit for j in trace.jobs), default=0)
    out: list[Replayed] = []
    rejected: list[str] = []
    for tj, route in zip(trace.jobs, routes, strict=True):
        if isinstance(route, str):
            rejected.append(tj.job_id)
            continue
        limit = None if route.time_limit_s is None else 60 * max(1, math.ceil(route.time_limit_s / factor / 60))
        job = tj._replace(submit=round((tj.submit - t0) / factor), duration=max(1, round(tj.duration / factor)),
                          time_limit_s=limit)
        out.append(Replayed(job, route._replace(time_limit_s=limit)))
    return out, rejected


class FixedRoutes:
    """Routes decided beforehand (by job id), for :func:`slurm_gpu.sim.engine.simulate`."""

    def __init__(self, jobs: Sequence[Replayed]) -> None:
        self._routes = {r.job.job_id: r.route for r in jobs}

    def route(self, job: TraceJob) -> Route | str:
        return self._routes.get(job.job_id, "not in the replay")


def params_from_conf(text: str, version: tuple[int, ...] = (22, 5)) -> Params:
    """The simulator's parameters for a slurm.conf (the lab's: slurm_gpu/lab/config.py). The mapping:

    - ``SchedulerType=sched/builtin`` -> no backfill; ``SchedulerParameters`` ``bf_interval`` (s),
      ``bf_window`` (min), ``bf_max_job_test``, ``default_queue_depth``, ``sched_interval`` (s) -> the
      same (Slurm's defaults 30 s, 1 day, 500, 100, 60 s otherwise);
    - ``PriorityType``: ``priority/basic`` (the default before 23.11) -> every weight 0 (jobs in submit
      order within their partition's PriorityTier); ``priority/multifactor`` -> ``PriorityWeightAge,
      QOS, Partition, Fairshare``, ``PriorityMaxAge``, ``PriorityDecayHalfLife``, ``PriorityCalcPeriod``;
    - ``PreemptType``: ``preempt/partition_prio`` or ``preempt/qos``, else off;
    - backfill reservations as sched/backfill makes them: whole nodes, on the ``bf_resolution`` grid
      (default 60 s) -- ``bf_whole_nodes``, ``bf_resolution_s`` (``clock0_s``, the wall clock at time 0,
      is the caller's).

    Not modelled: ``batch_sched_delay`` (the simulated main scheduler runs at every event, as Slurm's does
    on submissions and ends)."""
    from slurm_gpu.units import parse_time_seconds

    conf: dict[str, str] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        for word in line.split():
            if "=" in word:
                key, _, value = word.partition("=")
                conf.setdefault(key.lower(), value)
    sched = dict(w.partition("=")[::2] for w in conf.get("schedulerparameters", "").split(",") if w)
    default_prio = "priority/multifactor" if tuple(version[:2]) >= (23, 11) else "priority/basic"
    multifactor = conf.get("prioritytype", default_prio) == "priority/multifactor"

    def whole(text: str, key: str) -> int:
        value = ascii_int(text.strip())
        if value is None:
            raise ValueError(f"slurm.conf {key}={text[:40]!r}: not a whole number")
        return value

    def weight(key: str) -> int:
        return whole(conf.get(f"priorityweight{key}", "0"), f"PriorityWeight{key}") if multifactor else 0

    def secs(key: str, default: int, minutes: bool = False) -> int:
        v = conf.get(key)
        if v is None:
            return default
        return int(v) * 60 if minutes and is_digits(v) else parse_time_seconds(v)  # ASCII: parse_time is too

    preempt = conf.get("preempttype", "preempt/none").removeprefix("preempt/")
    return Params(
        backfill=conf.get("schedulertype", "sched/backfill") != "sched/builtin",
        bf_window_s=whole(sched.get("bf_window", "1440"), "bf_window") * 60,
        bf_interval_s=whole(sched.get("bf_interval", "30"), "bf_interval"),
        bf_max_job_test=whole(sched.get("bf_max_job_test", "500"), "bf_max_job_test"),
        default_queue_depth=whole(sched.get("default_queue_depth", "100"), "default_queue_depth"),
        # sched_interval=-1 disables Slurm's periodic pass: no full-queue pass (0)
        sched_interval_s=0 if sched.get("sched_interval", "").strip() == "-1"
        else whole(sched.get("sched_interval", "60"), "sched_interval"),
        bf_whole_nodes=True, bf_resolution_s=whole(sched.get("bf_resolution", "60"), "bf_resolution"),
        weight_age=weight("age"), weight_qos=weight("qos"), weight_partition=weight("partition"),
        weight_fairshare=weight("fairshare"), max_age_s=secs("prioritymaxage", 7 * 86400, True),
        half_life_s=secs("prioritydecayhalflife", 7 * 86400, True),
        calc_period_s=secs("prioritycalcperiod", 300, True),
        preempt_type=preempt if preempt in ("partition_prio", "qos") else "off",  # type: ignore[arg-type]
        ckpt_interval_s=0)


def release_gap(runs: Sequence[tuple[int, int, int]]) -> int:
    """The lab's release time (``Params.release_s``), measured from a real run's (submit, start, end)
    triples: over the jobs that waited, the median of start - the latest end at or before it (whole
    seconds, rounded down). It is what the scheduler and the nodes add after a job ends before its GPUs
    run the next one (COMPLETING, the epilog report, the next scheduling pass); 0 when no job waited."""
    ends = sorted(end for _s, _b, end in runs)
    gaps: list[float] = []
    for submit, start, _end in runs:
        if start > submit:
            before = [e for e in ends if e <= start]
            if before:
                gaps.append(start - before[-1])
    m = median(gaps)
    return 0 if m is None else int(m)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b of paired values: (concordant - discordant) / sqrt((n0 - tx) (n0 - ty)), with n0
    the pairs and tx, ty the pairs tied in x, in y. None when either side is all ties (or < 2 values)."""
    if len(x) != len(y):
        raise ValueError("kendall_tau_b: x and y differ in length")
    n = len(x)
    conc = disc = tx = ty = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 or dy == 0:
                tx += dx == 0
                ty += dy == 0
            elif (dx > 0) == (dy > 0):
                conc += 1
            else:
                disc += 1
    n0 = n * (n - 1) // 2
    denom = (n0 - tx) * (n0 - ty)
    return None if denom <= 0 else (conc - disc) / math.sqrt(denom)


def median(values: Sequence[float]) -> float | None:
    if not values:
        return None
    s = sorted(values)
    m = len(s) // 2
    return float(s[m]) if len(s) % 2 else (s[m - 1] + s[m]) / 2


class Comparison(NamedTuple):
    jobs: int  # jobs started in both
    tau_b: float | None  # start order, simulated against real
    median_abs_error_s: float | None
    mean_wait_s: float | None  # real first start - real submit, mean
    error_of_wait: float | None  # median_abs_error_s / mean_wait_s
    missing: tuple[str, ...]  # jobs started in only one of the two


def compare(real: Mapping[str, tuple[float, float]], simulated: Mapping[str, float | None]) -> Comparison:
    """``real``: job id -> (submit, first start); ``simulated``: job id -> first start (None: never).
    Times in seconds on the same axis."""
    ids = sorted(k for k in real if simulated.get(k) is not None)
    missing = tuple(sorted(set(real) ^ {k for k, v in simulated.items() if v is not None}))
    rs = [float(real[k][1]) for k in ids]
    ss = [float(simulated[k] or 0) for k in ids]
    errors = [abs(a - b) for a, b in zip(rs, ss, strict=True)]
    waits = [real[k][1] - real[k][0] for k in ids]
    mae = median(errors)
    mean_wait = sum(waits) / len(waits) if waits else None
    ratio = mae / mean_wait if mae is not None and mean_wait else None
    return Comparison(len(ids), kendall_tau_b(ss, rs), mae, mean_wait, ratio, missing)


def compare_classes(real: Mapping[str, tuple[float, float]], simulated: Mapping[str, float | None],
                    classes: Mapping[str, Sequence[str]]) -> dict[str, Comparison]:
    """:func:`compare` for all jobs (``"all"``) and for each class label of ``classes`` (job id -> its
    labels, e.g. ``("partition=batch", "qos=normal")``): each class's tau-b is its own jobs' start order,
    its error ratio over its own mean wait. Labels in sorted order after ``"all"``."""
    out = {"all": compare(real, simulated)}
    labels = sorted({c for cs in classes.values() for c in cs})
    for label in labels:
        ids = {k for k, cs in classes.items() if label in cs}
        out[label] = compare({k: v for k, v in real.items() if k in ids},
                             {k: v for k, v in simulated.items() if k in ids})
    return out


def with_lab_scheduler(conf: str) -> str | None:
    """``conf`` (a slurm.conf's text) with its SchedulerParameters line replaced by (or, when it has none,
    followed by) the line of :data:`slurm_gpu.sim.params.LAB_SCHEDULER_PARAMETERS`; None when it already
    has that line."""
    from slurm_gpu.slurm.scheduler_params import lab_scheduler_line

    want = lab_scheduler_line()
    lines = conf.splitlines()
    at = [i for i, line in enumerate(lines) if line.strip().lower().startswith("schedulerparameters=")]
    if [lines[i].strip() for i in at] == [want]:
        return None
    kept = [line for i, line in enumerate(lines) if i not in at]
    kept.insert(at[0] if at else len(kept), want)
    return "\n".join(kept) + "\n"


TICKS = 10  # the lab comparison simulates in tenths of a second (lab_timing, in_ticks) ...
TICKS_MS = 1000  # ... or in milliseconds, where slurmctld's log gave the record its times (sim/ctld_log.py)


class LabTiming(NamedTuple):
    """What a lab adds to each run, in ticks (1/``ticks`` s), measured from a real run's times."""

    overhead: int  # a run lasts its sleep plus this (slurmd's launch, the step's start and end)
    release: int  # the next job starts this long after an end (the completion, the triggered main pass)
    submit_delay: int = 0  # a job that can start at once starts this long after its submission
    ticks: int = TICKS  # per second
    bf_phase: int | None = None  # backfill passes run this long after each multiple of bf_interval from time 0


def lab_timing(runs: Sequence[tuple[float, float | None, float | None, int, int]],
               ticks: int = TICKS, backfill_starts: Sequence[float] = (), bf_interval_s: int = 0) -> LabTiming:
    """From (submit, start, end, sleep seconds, runs) per real job: ``overhead`` = the mean of end - start
    - sleep over the jobs that ran once; ``release``: of start - the latest end at or before it over the
    jobs that waited and started within 2 s of an end.

    From sacct's whole seconds (``ticks`` = :data:`TICKS`): ``release`` is the mean, and no submit delay.
    Truncation to whole seconds makes each difference off by under a second either way, but its mean is
    the true mean when the fractions of the second fall evenly, so tenths are measurable. From the
    log's milliseconds (``ticks`` = :data:`TICKS_MS`): ``release`` is the median, which a backfill start
    that happened to come within 2 s of an end does not move, and ``submit_delay`` the median of start -
    submit over the jobs that started within 2 s of their submission with no end in between, and
    ``bf_phase`` where backfill started jobs (``backfill_starts``, seconds from time 0): the median of
    their times past the last multiple of ``bf_interval_s`` (a backfill pass starts its jobs within
    milliseconds; slurmctld keeps its passes on one phase from its own start)."""
    over = [end - start - sleep for _sub, start, end, sleep, n in runs
            if n == 1 and start is not None and end is not None]
    ends = sorted(end for _s, _b, end, _d, _n in runs if end is not None)
    gaps: list[float] = []
    at_once: list[float] = []
    for submit, start, _end, _sleep, _n in runs:
        if start is not None and start > submit:
            before = [e for e in ends if e <= start]
            if before and start - before[-1] <= 2:
                gaps.append(start - before[-1])
            if start - submit <= 2 and not (before and before[-1] > submit):
                at_once.append(start - submit)

    def mean_ticks(values: list[float]) -> int:
        return max(0, round(ticks * sum(values) / len(values))) if values else 0

    def median_ticks(values: list[float]) -> int:
        m = median(values)
        return 0 if m is None else max(0, round(ticks * m))

    if ticks == TICKS:
        return LabTiming(mean_ticks(over), mean_ticks(gaps))
    return LabTiming(mean_ticks(over), median_ticks(gaps), median_ticks(at_once), ticks,
                     phase_ticks(backfill_starts, bf_interval_s, ticks))


def phase_ticks(times: Sequence[float], interval_s: int, ticks: int) -> int | None:
    """The median phase of ``times`` (seconds) past multiples of ``interval_s``, in ticks, taken around
    the circle (phases of 4.9 and 0.1 in 5 s are 0.2 apart): None without times or an interval."""
    if not times or interval_s <= 0:
        return None
    ref = times[0] % interval_s
    half = interval_s / 2
    off = median([(t % interval_s - ref + half) % interval_s - half for t in times])
    return round(ticks * ((ref + (off or 0)) % interval_s)) % (ticks * interval_s)


def in_ticks(params: Params, timing: LabTiming) -> Params:
    """``params`` with every time in ticks (``timing.ticks`` per second); a run's GPUs and limits are free
    at its end, the main pass it triggers runs the lab's measured release later (``sched_delay_s``), and
    the one a submission triggers its measured submit delay later (``submit_delay_s``)."""
    t = timing.ticks
    return params._replace(bf_window_s=params.bf_window_s * t, bf_interval_s=params.bf_interval_s * t,
                           sched_interval_s=params.sched_interval_s * t, bf_resolution_s=params.bf_resolution_s * t,
                           clock0_s=params.clock0_s * t, max_age_s=params.max_age_s * t,
                           half_life_s=params.half_life_s * t, calc_period_s=params.calc_period_s * t,
                           ckpt_interval_s=params.ckpt_interval_s * t, release_s=0,
                           sched_delay_s=timing.release, submit_delay_s=timing.submit_delay,
                           bf_phase_s=timing.bf_phase)
