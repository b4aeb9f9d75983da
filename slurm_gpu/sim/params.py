# SPDX-License-Identifier: Apache-2.0
"""The simulator's parameters (Slurm's names where Slurm has one) and the simulated job."""

from __future__ import annotations

from typing import Literal

from slurm_gpu.plain import NamedTuple
from slurm_gpu.sim.cluster import Alloc

PreemptType = Literal["partition_prio", "qos", "off"]
FairShareScheme = Literal["classic", "fair-tree"]
Allocator = Literal["priority", "drf"]
NO_LIMIT_S = 365 * 86400  # what backfill plans for a job without a time limit (Slurm: a year)


class Params(NamedTuple):
    """Scheduler parameters. Defaults: Slurm 22.05's, and the priority weights of UB's slurm_sim_tools
    tutorial slurm.conf (docs/simulate.md)."""

    backfill: bool = True  # SchedulerType=sched/backfill (False: sched/builtin, the main scheduler only)
    bf_window_s: int = 1440 * 60  # bf_window (minutes in slurm.conf)
    bf_interval_s: int = 30  # bf_interval
    bf_max_job_test: int = 500  # bf_max_job_test: pending jobs one backfill pass tests (Slurm 22.05/24.11: 500)
    # default_queue_depth: jobs an event-triggered main pass tests (Slurm's loop takes one more: job_depth++ > it)
    default_queue_depth: int = 100
    # sched_interval: the main pass tests the whole queue when this long has passed (at the first event at or
    # after each multiple from the first submit); 0: never (every pass stops at default_queue_depth)
    sched_interval_s: int = 60
    # sched/backfill (22.05) reserves a pending job's nodes whole (no lower job whose time limit overlaps
    # the reservation may use them, however many GPUs are left) from start to start + limit, both
    # rounded down to bf_resolution on the wall clock. The defaults reserve GPUs, to the second;
    # validate.params_from_conf (the lab's slurm.conf) sets Slurm's way.
    bf_whole_nodes: bool = False
    bf_resolution_s: int = 0  # bf_resolution (Slurm's default 60); 0: exact seconds
    clock0_s: int = 0  # the wall-clock (epoch) second of simulated time 0, for bf_resolution's alignment
    weight_age: int = 70000  # PriorityWeightAge
    weight_qos: int = 50000  # PriorityWeightQOS
    weight_partition: int = 1000000  # PriorityWeightPartition (PriorityJobFactor = the partition's tier)
    weight_fairshare: int = 0  # PriorityWeightFairshare (UB's tutorial: 120000); 0 = no fair share
    max_age_s: int = 7 * 86400  # PriorityMaxAge
    half_life_s: int = 7 * 86400  # PriorityDecayHalfLife
    calc_period_s: int = 300  # PriorityCalcPeriod
    preempt_type: PreemptType = "partition_prio"  # PreemptType (what `slurm-gpu admin emit` writes)
    ckpt_interval_s: int = 0  # the jobs' checkpoint interval; 0: none (a preempted run loses all its work)
    release_s: int = 0  # a run's GPUs are free this long after it ends (COMPLETING, epilog, the next pass)
    # the main pass an end triggers runs this long after it (slurmctld queues it; ends in between are seen
    # together); 0: at the end itself. The lab comparison measures it (validate.lab_timing)
    sched_delay_s: int = 0
    # the main pass a submission triggers runs this long after it (with sched_delay_s > 0); 0: at the
    # submission itself. Measured by the lab comparison from slurmctld's log (validate.lab_timing)
    submit_delay_s: int = 0
    # backfill passes run at this time past each multiple of bf_interval_s (slurmctld's own phase, measured
    # by the lab comparison from its log); None: on multiples from the first submission
    bf_phase_s: int | None = None
    fairshare: FairShareScheme = "classic"  # PriorityFlags=NO_FAIR_TREE (classic) or FAIR_TREE (Slurm's default)
    shares: tuple[tuple[str, float], ...] = ()  # sacctmgr Fairshare= per account path ("phys/theory"); else 1
    billing_weights: tuple[tuple[str, float], ...] = (("gres/gpu", 1.0),)  # TRESBillingWeights (cpu, mem GB, gres/gpu)
    max_tres: bool = False  # PriorityFlags=MAX_TRES: billing is the largest weighted TRES, not the sum
    allocator: Allocator = "priority"  # the order of pending jobs: multifactor priority, or DRF (sim/drf.py)


class SimJob:
    """One routed job and its state in the simulation (mutable; the engine's own)."""

    __slots__ = ("idx", "job_id", "user", "account", "job_class", "submit", "eligible", "work", "limit",
                 "partition", "qos", "gpu_type", "nodes", "per_node", "slices", "gpus", "tier", "qos_prio",
                 "preemptible", "preempts", "preempt_mode", "grace_s", "max_requeues",
                 "prio", "prio_at", "start", "first_start", "end", "alloc", "state", "preempted", "requeues", "run",
                 "waiting", "victims", "gpu_s", "lost_gpu_s", "cpus", "mem_gb",
                 "ran_type", "started_by", "holds_limit")

    def __init__(self, idx: int, job_id: str, submit: int, work: int, limit: int | None) -> None:
        self.idx, self.job_id, self.submit, self.work, self.limit = idx, job_id, submit, work, limit
        self.user: str | None = None
        self.account: str | None = None
        self.job_class = ""
        self.eligible = submit  # the age factor counts from here (reset by a requeue)
        self.partition = ""
        self.qos: str | None = None
        self.gpu_type: str | None = None
        self.nodes = 1
        self.per_node = 0
        self.slices = 0
        self.gpus = 0.0  # GPUs it holds (a MIG slice: slices/7)
        self.tier = 1
        self.qos_prio = 0
        self.preemptible = False
        self.preempts: tuple[str, ...] = ()
        self.preempt_mode = "requeue"
        self.grace_s = 0
        self.max_requeues = 0
        self.prio = 0.0
        self.prio_at: int | None = None  # the recompute that ``prio`` dates from (None: its own time)
        self.start: int | None = None
        self.first_start: int | None = None
        self.end: int | None = None  # when this run ends (real duration, limit or preemption)
        self.alloc: Alloc = ()
        self.state = "PENDING"  # PENDING RUNNING PREEMPTING COMPLETED TIMEOUT PREEMPTED
        self.preempted = 0
        self.requeues = 0
        self.run = 0  # run number: stale end events of an earlier run are ignored
        self.waiting = 0  # victims still in their grace time for this job
        self.victims: list[SimJob] = []
        self.gpu_s = 0.0  # GPU-seconds held
        self.lost_gpu_s = 0.0  # GPU-seconds of work lost to preemption
        self.cpus = 0  # CPUs it holds (the trace's, else the policy's cpus_per_gpu x GPUs; 0: not known)
        self.mem_gb = 0.0  # memory it holds (the policy's mem_per_gpu x GPUs; 0: not known)
        self.ran_type: str | None = None  # the GPU type of the nodes it last ran on (for its price)
        self.holds_limit = False  # its GPUs count against its QOS's GPUs per user (until its run ends)
        self.started_by = ""  # which pass started its first run: "main" or "backfill" (for the comparison)

    @property
    def planned_end(self) -> int:
        """When backfill expects the run to end: start + time limit (not the true duration)."""
        assert self.start is not None
        if self.state == "PREEMPTING" and self.end is not None:
            return self.end
        return self.start + (self.limit if self.limit is not None else NO_LIMIT_S)
