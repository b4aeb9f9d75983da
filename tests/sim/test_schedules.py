# SPDX-License-Identifier: Apache-2.0
"""Table tests with hand-computed schedules on the tiny policy (2 nodes x 4 GPUs, tests/sim/data/tiny.yaml).

Times are epoch seconds; ``time_limit`` is minutes (Slurm's grammar). Each expected schedule is
worked out in the comment above it.
"""

from __future__ import annotations

from tests.sim.helpers import run, schedule

# a holds all 8 GPUs 0-100 (limit 10m); b (4 GPUs) starts at 100 on one node, its limit plans it until 700;
# c (8 GPUs) is then blocked and its partition too, so d (4 GPUs) waits in the main scheduler.
QUEUE = """job_id,user,gpu_num,node_num,submit_time,duration,time_limit
a,u,8,2,0,100,10
b,u,4,1,10,50,10
c,u,8,2,20,30,10
d,u,4,1,30,50,{d_limit}
"""


def test_fifo_main_scheduler_only() -> None:
    # no backfill: b 100-150; c 150-180 (both nodes); d only after c: 180-230
    got = schedule(run(QUEUE.format(d_limit=1), backfill=False))
    assert got == {"a": (0, 100), "b": (100, 150), "c": (150, 180), "d": (180, 230)}


def test_backfill_starts_a_job_that_ends_before_the_reservation() -> None:
    # c's reservation: both nodes from b's planned end 100 + 600 = 700; d's limit (1m) ends at 160 < 700:
    # d backfills at 100 on the other node, and ends at 150
    got = schedule(run(QUEUE.format(d_limit=1)))
    assert got == {"a": (0, 100), "b": (100, 150), "d": (100, 150), "c": (150, 180)}


def test_backfill_plans_on_the_time_limit_not_the_true_duration() -> None:
    # d truly runs 50 s, but its limit (15m) ends at 1000 > 700: it would delay c's reservation,
    # so it does not backfill; c starts when b ends (150), d after c (180)
    got = schedule(run(QUEUE.format(d_limit=15)))
    assert got == {"a": (0, 100), "b": (100, 150), "c": (150, 180), "d": (180, 230)}


def test_bf_window_bounds_the_reservations() -> None:
    # with bf_window 5 min c's reservation (at 700) is beyond the window: not made, and d (15m) backfills
    got = schedule(run(QUEUE.format(d_limit=15), bf_window_s=300))
    assert got["d"] == (100, 150) and got["c"] == (150, 180)


def test_gang_start_takes_every_node_at_once() -> None:
    # p holds 1 GPU of n1 0-100 (limit 2m: planned until 120); q needs 2 nodes x 4 GPUs: it cannot start
    # on n2 alone and waits for p, then starts on both nodes at 100. r (3 GPUs, limit 1m) fits beside p
    # and ends before q's reservation (120): it backfills at 20.
    text = """job_id,user,gpu_num,node_num,submit_time,duration,time_limit
p,u,1,1,0,100,2
q,u,8,2,10,10,10
r,u,3,1,20,10,1
"""
    result = run(text)
    assert schedule(result) == {"p": (0, 100), "q": (100, 110), "r": (20, 30)}
    q = next(j for j in result.jobs if j.job_id == "q")
    assert q.nodes == 2 and q.per_node == 4


PREEMPT = """job_id,user,gpu_num,node_num,submit_time,duration,time_limit,partition
s,u,8,2,0,1000,60,spot
h,u,4,1,100,50,10,prio
"""


def test_preemption_requeues_after_the_grace_time() -> None:
    # h (prio, tier 10) cannot fit: it preempts s (spot, tier 1, preemptible). s gets the spot grace time
    # (60 s), ends at 160 and is requeued; h starts at 160, ends 210; s runs again from 210 with all its
    # work (no checkpoints): 210 + 1000 = 1210
    result = run(PREEMPT)
    assert schedule(result) == {"s": (210, 1210), "h": (160, 210)}
    s = result.jobs[0]
    assert (s.preempted, s.requeues, s.first_start, s.state) == (1, 1, 0, "COMPLETED")
    assert s.lost_gpu_s == 8 * 160


def test_preemption_loses_only_the_work_since_the_last_checkpoint() -> None:
    # checkpoints every 30 s: of the 160 s run, 150 s are kept; 850 s are left: 210 + 850 = 1060
    result = run(PREEMPT, ckpt_interval_s=30)
    assert schedule(result)["s"] == (210, 1060)
    assert result.jobs[0].lost_gpu_s == 8 * 10


def test_no_preemption_when_preemption_is_off() -> None:
    # h waits for s to end (1000), then runs 1000-1050
    assert schedule(run(PREEMPT, preempt_type="off")) == {"s": (0, 1000), "h": (1000, 1050)}


def test_requeues_stop_at_max_requeues_then_the_job_is_cancelled() -> None:
    # tiny's max_requeues is 2: the third preemption cancels s (state PREEMPTED)
    text = PREEMPT + "h2,u,4,1,300,50,10,prio\nh3,u,4,1,1300,50,10,prio\n"
    result = run(text)
    s = result.jobs[0]
    # s: 0-160 (preempted by h), 210-360 (by h2 at 300 + 60 grace), 410-...: h3 at 1300 preempts it for good
    assert (s.preempted, s.requeues, s.state, s.end) == (3, 2, "PREEMPTED", 1360)


def test_mig_slices_are_packed_on_one_gpu() -> None:
    # three 1g slices (f=0.1) and one 3g slice (f=0.4) pack onto one GPU (1+1+1+3 <= 7), so a 4-GPU and
    # a 3-GPU job still fit on the other 7 GPUs: everything starts at 0
    text = """job_id,user,gpu_num,node_num,submit_time,duration,time_limit,gpu_fraction
m1,u,1,1,0,100,10,0.1
m2,u,1,1,0,100,10,0.1
m3,u,1,1,0,100,10,0.1
m4,u,1,1,0,100,10,0.4
w4,u,4,1,0,100,10,
w3,u,3,1,0,100,10,
"""
    result = run(text)
    assert {j.job_id: j.start for j in result.jobs} == dict.fromkeys(("m1", "m2", "m3", "m4", "w4", "w3"), 0)
    assert {j.job_id: j.slices for j in result.jobs if j.slices} == {"m1": 1, "m2": 1, "m3": 1, "m4": 3}
    assert {j.partition for j in result.jobs if j.slices} == {"mig"}


FAIR = """job_id,user,account,gpu_num,node_num,submit_time,duration,time_limit
a1,u,A,8,2,0,100,10
bA,u,A,8,2,50,10,10
bB,v,B,8,2,60,10,10
"""


def test_without_fair_share_the_older_job_goes_first() -> None:
    assert schedule(run(FAIR, calc_period_s=1)) == {"a1": (0, 100), "bA": (100, 110), "bB": (110, 120)}


def test_fair_share_orders_after_usage() -> None:
    # at 100 account A has used 800 GPU-s, B none: F(A) = 2^(-1/0.5) = 0.25, F(B) = 1; with weight 120000
    # bB's 90000 more outweighs bA's 10 s more age (~1.2): bB runs first
    got = schedule(run(FAIR, calc_period_s=1, weight_fairshare=120000))
    assert got == {"a1": (0, 100), "bB": (100, 110), "bA": (110, 120)}


def test_higher_tier_partition_goes_first() -> None:
    # both wait for a; at 100 the prio job (tier 10) starts before the older batch job (tier 5)
    text = """job_id,user,gpu_num,node_num,submit_time,duration,time_limit,partition
a,u,8,2,0,100,10,
b,u,8,2,10,10,10,
c,u,8,2,20,10,10,prio
"""
    assert schedule(run(text)) == {"a": (0, 100), "b": (110, 120), "c": (100, 110)}


def test_a_run_is_cut_at_its_time_limit() -> None:
    text = "job_id,user,gpu_num,submit_time,duration,time_limit\nx,u,1,0,500,5\n"
    result = run(text)
    assert schedule(result) == {"x": (0, 300)} and result.jobs[0].state == "TIMEOUT"


GANG_RESERVATION = """job_id,user,gpu_num,node_num,submit_time,duration,time_limit
a,u,4,1,0,600,10
b,u,4,1,0,1200,20
c,u,8,2,10,60,10
d,u,4,1,20,300,{d_limit}
"""


def test_a_gang_is_reserved_when_its_last_node_is_planned_free() -> None:
    # a on n1 until 600 (planned 600), b on n2 until 1200 (planned 1200): c (2 nodes) is reserved on both
    # from 1200. When a ends, d (limit 10m: 600-1200) fits on n1 before that reservation and backfills.
    got = schedule(run(GANG_RESERVATION.format(d_limit=10)))
    assert got == {"a": (0, 600), "b": (0, 1200), "c": (1200, 1260), "d": (600, 900)}


def test_a_job_that_would_delay_a_gang_reservation_waits() -> None:
    # d's limit 11m would end at 1260 > 1200: it waits for c, and starts when c ends
    got = schedule(run(GANG_RESERVATION.format(d_limit=11)))
    assert got == {"a": (0, 600), "b": (0, 1200), "c": (1200, 1260), "d": (1260, 1560)}


def test_qos_gpus_per_user_hold_the_users_jobs_but_block_no_one() -> None:
    # QOS normal with max_gpus_per_user=2 (MaxTRESPerUser=gres/gpu=2): a (u, 2 GPUs) runs 0-100; b (u, 1 GPU)
    # would make u's 3 GPUs: it waits (QOSMaxGRESPerUser) until a ends at 100 and runs 100-150; c (v, 1 GPU),
    # submitted after b, is not blocked by it and starts at 0
    import dataclasses

    from slurm_gpu.sim.engine import simulate
    from slurm_gpu.sim.params import Params
    from slurm_gpu.sim.traces import read_trace
    from tests.sim.helpers import TINY

    qos = tuple(dataclasses.replace(q, max_gpus_per_user=2) if q.name == "normal" else q for q in TINY.qos)
    policy = dataclasses.replace(TINY, qos=qos)
    text = "job_id,user,gpu_num,submit_time,duration\na,u,2,0,100\nb,u,1,0,50\nc,v,1,0,30\n"
    for backfill in (False, True):
        got = schedule(simulate(read_trace(text.splitlines(), "t.csv"), policy, Params(backfill=backfill,
                                                                                        bf_interval_s=1)))
        assert got == {"a": (0, 100), "b": (100, 150), "c": (0, 30)}
    assert schedule(simulate(read_trace(text.splitlines(), "t.csv"), TINY, Params()))["b"] == (0, 50)


def test_release_time_holds_the_gpus_after_a_run_ends() -> None:
    # release_s=2: a (8 GPUs) ends at 100 but its GPUs are free at 102, so b starts at 102 (reported end
    # of a: 100); without it b starts at 100
    text = "job_id,user,gpu_num,node_num,submit_time,duration\na,u,8,2,0,100\nb,u,4,1,10,50\n"
    assert schedule(run(text, release_s=2)) == {"a": (0, 100), "b": (102, 152)}
    assert schedule(run(text)) == {"a": (0, 100), "b": (100, 150)}


# Fair Tree: one account A with users u1 and u2 (and nothing else). x (u1) uses 8 GPUs x 100 s; at 100 A's
# Level FS is 1 (all usage, all shares); in A, u1's is 0.5/1 = 0.5 and u2's infinite: u2 ranks 2 (F = 1),
# u1 1 (F = 0.5). p2 (u2) goes first although p1 (u1) is 10 s older (age: 70000 x 10/604800 = 1.2 against
# 120000 x 0.5). Classic fair share gives both users A's factor, so the older p1 goes first.
FAIR_USERS = """job_id,user,account,gpu_num,node_num,submit_time,duration,time_limit
x,u1,A,8,2,0,100,10
p1,u1,A,8,2,10,10,10
p2,u2,A,8,2,20,10,10
"""


def test_fair_tree_orders_users_within_an_account_after_usage() -> None:
    fair_tree = schedule(run(FAIR_USERS, calc_period_s=1, weight_fairshare=120000, fairshare="fair-tree"))
    assert fair_tree == {"x": (0, 100), "p2": (100, 110), "p1": (110, 120)}
    classic = schedule(run(FAIR_USERS, calc_period_s=1, weight_fairshare=120000, fairshare="classic"))
    assert classic == {"x": (0, 100), "p1": (100, 110), "p2": (110, 120)}


def test_fair_tree_orders_accounts_after_usage() -> None:
    # as test_fair_share_orders_after_usage: at 100 A (800 GPU-s) has Level FS 0.5/1, B infinite: B's user
    # ranks 2 (F = 1), A's 1 (F = 0.5); bB first
    got = schedule(run(FAIR, calc_period_s=1, weight_fairshare=120000, fairshare="fair-tree"))
    assert got == {"a1": (0, 100), "bB": (100, 110), "bA": (110, 120)}


# Billing: a0 (A) ran 1 GPU with 32 CPUs, b0 (B) 2 GPUs with 4 CPUs, both 0-100. Billed on GPUs (the
# default) B used more (200 against 100): A's pA goes first although pB is older; billed CPU=1,GRES/gpu=1
# with MAX_TRES (a0: max(32, 1) = 32/s, b0: max(4, 2) = 4/s) A used more: pB goes first.
BILLING = """job_id,user,account,gpu_num,cpu_num,node_num,submit_time,duration,time_limit
a0,u,A,1,32,1,0,100,10
b0,v,B,2,4,1,0,100,10
pB,v,B,8,64,2,10,10,10
pA,u,A,8,64,2,20,10,10
"""


def test_billing_weights_decide_fair_share_usage() -> None:
    gpus = schedule(run(BILLING, calc_period_s=1, weight_fairshare=120000))
    assert gpus["pA"] == (100, 110) and gpus["pB"] == (110, 120)
    cpus = schedule(run(BILLING, calc_period_s=1, weight_fairshare=120000, max_tres=True,
                        billing_weights=(("cpu", 1.0), ("gres/gpu", 1.0))))
    assert cpus["pB"] == (100, 110) and cpus["pA"] == (110, 120)


# DRF: x (A) holds all 8 GPUs 0-100. At 100 a1, a2 (A, 4 GPUs each, older) and b1 (B, 4 GPUs) wait. In priority
# order (age) a1 and a2 fill the cluster, b1 waits until 150. DRF: A and B run nothing at 100 (a tie: the
# older a1), then A holds 4/8 and B 0: b1, then a2 (at 150).
DRF = """job_id,user,account,gpu_num,node_num,submit_time,duration,time_limit
x,u,A,8,2,0,100,10
a1,u,A,4,1,10,50,10
a2,u,A,4,1,11,50,10
b1,v,B,4,1,20,50,10
"""


def test_drf_allocator_order() -> None:
    assert schedule(run(DRF)) == {"x": (0, 100), "a1": (100, 150), "a2": (100, 150), "b1": (150, 200)}
    for backfill in (False, True):
        assert schedule(run(DRF, allocator="drf", backfill=backfill)) == {
            "x": (0, 100), "a1": (100, 150), "b1": (100, 150), "a2": (150, 200)}


def test_bf_max_job_test_bounds_the_jobs_one_pass_tests() -> None:
    # as test_backfill_starts_a_job_that_ends_before_the_reservation, but a pass tests only c (the first
    # pending job): d is never looked at by backfill and waits for c (FIFO: 180-230)
    got = schedule(run(QUEUE.format(d_limit=1), bf_max_job_test=1))
    assert got == {"a": (0, 100), "b": (100, 150), "c": (150, 180), "d": (180, 230)}


def test_default_queue_depth_bounds_an_event_pass_and_sched_interval_tests_all() -> None:
    # QOS normal with 2 GPUs per user: a (u, 2 GPUs) runs 0-1000, so u's b1 b2 b3 (1 GPU each, older than c)
    # wait over the limit; they count against default_queue_depth as Slurm's loop counts them.
    # depth 100: c (v) starts at once (2). depth 2 (3 jobs taken: b1 b2 b3): the event passes at 2 do not
    # reach c; the first event at or after sched_interval (60 s from the first submit) is e's submit at 70:
    # a full pass, c and e start then. Without full passes (sched_interval 0) c waits until a's end lets
    # b1 and b2 start (1000) and their end lets b3 start (1050): the pass at 1050 takes b3, c, e.
    import dataclasses

    from slurm_gpu.sim.engine import simulate
    from slurm_gpu.sim.params import Params
    from slurm_gpu.sim.traces import read_trace
    from tests.sim.helpers import TINY

    qos = tuple(dataclasses.replace(q, max_gpus_per_user=2) if q.name == "normal" else q for q in TINY.qos)
    policy = dataclasses.replace(TINY, qos=qos)
    text = ("job_id,user,gpu_num,submit_time,duration\na,u,2,0,1000\nb1,u,1,1,50\nb2,u,1,1,50\nb3,u,1,1,50\n"
            "c,v,1,2,30\ne,w,1,70,30\n")

    def starts(**params: object) -> dict[str, int | None]:
        result = simulate(read_trace(text.splitlines(), "t.csv"), policy,
                          Params(backfill=False, **params))  # type: ignore[arg-type]
        return {j.job_id: j.first_start for j in result.jobs}

    assert starts() == {"a": 0, "b1": 1000, "b2": 1000, "b3": 1050, "c": 2, "e": 70}
    assert starts(default_queue_depth=2) == {"a": 0, "b1": 1000, "b2": 1000, "b3": 1050, "c": 70, "e": 70}
    assert starts(default_queue_depth=2, sched_interval_s=0)["c"] == 1050


def _capped(cap: int = 2):  # type: ignore[no-untyped-def]
    import dataclasses

    from tests.sim.helpers import TINY

    qos = tuple(dataclasses.replace(q, max_gpus_per_user=cap) if q.name == "normal" else q for q in TINY.qos)
    return dataclasses.replace(TINY, qos=qos)


def test_a_job_over_its_user_limit_blocks_no_one_even_when_its_nodes_are_busy() -> None:
    # What the lab's slurmctld log shows (22.05.8, debug-cap run 1: JobId=7, 2 a100 GPUs over the debug
    # QOS's 2 per user, a100n1 with 1 GPU free; the main scheduler started JobId=10 after it in the same
    # partition). QOS normal, 4 GPUs per user, no backfill. n1: a (u, 2 GPUs, 0-200) and g (y, 2, 0-100);
    # n2: f (x, 4). b (u, 3 GPUs) is over u's limit (5 > 4) and no node has 3 free: it is passed over, and
    # c (v, 1 GPU) behind it starts at g's end; b starts when a's end frees both its limit and n1.
    from slurm_gpu.sim.engine import simulate
    from slurm_gpu.sim.params import Params
    from slurm_gpu.sim.traces import read_trace

    text = ("job_id,user,gpu_num,submit_time,duration\na,u,2,0,200\nf,x,4,0,1000\ng,y,2,0,100\n"
            "b,u,3,1,50\nc,v,1,2,30\n")
    trace = read_trace(text.splitlines(), "t.csv")
    got = {j.job_id: j.first_start for j in simulate(trace, _capped(4), Params(backfill=False)).jobs}
    assert got == {"a": 0, "f": 0, "g": 0, "b": 200, "c": 100}


def test_a_runs_end_frees_its_user_limit_before_its_gpus() -> None:
    # release_s=2: a's GPUs are free 2 s after its end (COMPLETING), but its GPUs leave u's per-user count
    # at the end itself (job completion): b (u, 2 GPUs, over the limit while a runs, nodes free) starts at
    # a's end, 100, not 102
    from slurm_gpu.sim.engine import simulate
    from slurm_gpu.sim.params import Params
    from slurm_gpu.sim.traces import read_trace

    text = "job_id,user,gpu_num,submit_time,duration\na,u,2,0,100\nb,u,2,1,50\n"
    for backfill in (False, True):
        got = schedule(simulate(read_trace(text.splitlines(), "t.csv"), _capped(),
                                Params(backfill=backfill, bf_interval_s=1, release_s=2)))
        assert got == {"a": (0, 100), "b": (100, 150)}


def test_the_main_pass_after_an_end_waits_sched_delay_and_sees_every_end_before_it() -> None:
    # QOS normal, 2 GPUs per user, no backfill. a and b (u, 1 GPU each) end at 100 and 102; c (u, 2 GPUs)
    # and d (u, 1 GPU) wait for u's limit, c first. At once (delay 0): a's end lets d in at 100 (c is still
    # over the limit: b runs), and c waits for d. With the lab's delay (3 s here), the pass at 103 sees
    # both ends: c starts, d waits for it. (The lab, 22.05.8: two completions 52 ms apart, one main pass
    # 0.2 s after the second, which started the 2-GPU job.)
    from slurm_gpu.sim.engine import simulate
    from slurm_gpu.sim.params import Params
    from slurm_gpu.sim.traces import read_trace

    text = "job_id,user,gpu_num,submit_time,duration\na,u,1,0,100\nb,u,1,0,102\nc,u,2,1,50\nd,u,1,2,50\n"
    trace = read_trace(text.splitlines(), "t.csv")

    def starts(delay: int) -> dict[str, int | None]:
        return {j.job_id: j.first_start for j in
                simulate(trace, _capped(), Params(backfill=False, sched_delay_s=delay)).jobs}

    assert starts(0) == {"a": 0, "b": 0, "c": 150, "d": 100}
    assert starts(3) == {"a": 0, "b": 0, "c": 103, "d": 156}


def test_a_submission_queues_the_main_pass_submit_delay_later_and_an_end_can_bring_it_forward() -> None:
    # The lab, 22.05.8 (slurmctld's log of debug-cap runs 3 and 4): a job that can start at once starts
    # 0.3-0.7 s after its submission, in the main pass the submission queued, and a start after an end
    # comes ~0.1 s after it. No backfill; b and f take a whole node each (e, at time 0, starts in the
    # pass of the first priority calculation). With a submit delay of 5 and a sched delay of 1: b and f,
    # submitted at 3, start at 8; c, submitted at 25, queues a pass at 30, but b's end at 28 queues one
    # at 29, which starts c. Without the submit delay, b ends at 23 and c starts at once.
    from slurm_gpu.sim.engine import simulate
    from slurm_gpu.sim.params import Params
    from slurm_gpu.sim.traces import read_trace

    text = "job_id,user,gpu_num,submit_time,duration\ne,u,1,0,1\nb,x,4,3,20\nf,y,4,3,100\nc,v,4,25,10\n"
    trace = read_trace(text.splitlines(), "t.csv")

    def starts(**kw: int) -> dict[str, int | None]:
        return {j.job_id: j.first_start for j in simulate(trace, _capped(4), Params(backfill=False, **kw)).jobs}

    assert starts(sched_delay_s=1, submit_delay_s=5) == {"e": 0, "b": 8, "f": 8, "c": 29}
    assert starts(sched_delay_s=1) == {"e": 0, "b": 3, "f": 3, "c": 25}


def test_backfill_passes_run_at_the_measured_phase() -> None:
    # x (3 GPUs of n1) and y (n2) run 0-100; h (both nodes) waits for them and blocks its partition for
    # the main pass; b (1 GPU, 1 minute) fits n1's free GPU before h's reservation at 100: only backfill
    # starts it. Passes every 10 s: on multiples from the first submission (0) b starts at 10; at the
    # lab's measured phase 4, at 4; at phase 1 (before b's submission at 2), at 11.
    from slurm_gpu.sim.engine import simulate
    from slurm_gpu.sim.params import Params
    from slurm_gpu.sim.traces import read_trace

    text = ("job_id,user,gpu_num,node_num,submit_time,duration,time_limit\nx,u,3,1,0,100,2\ny,v,4,1,0,100,2\n"
            "h,w,8,2,1,10,1\nb,z,1,1,2,5,1\n")
    trace = read_trace(text.splitlines(), "t.csv")
    for phase, start in ((None, 10), (4, 4), (1, 11)):
        p = Params(bf_interval_s=10, bf_phase_s=phase, bf_whole_nodes=True)
        got = {j.job_id: (j.first_start, j.started_by) for j in simulate(trace, _capped(8), p).jobs}
        assert got["b"] == (start, "backfill") and got["h"][0] == 100, (phase, got)
