# SPDX-License-Identifier: Apache-2.0
"""Fair Tree (slurm_gpu/sim/fairtree.py) and billing (priority.billing): Level FS, ranks, ties, shares,
TRESBillingWeights and MAX_TRES, each worked out by hand in the comment above it."""

from __future__ import annotations

import pytest

from slurm_gpu.sim.fairtree import Tree, factors, level_fs
from slurm_gpu.sim.params import Params, SimJob
from slurm_gpu.sim.priority import billing
from slurm_gpu.sim.settings import SettingError, parse_billing_weights, parse_shares

ASSOCS = [("A", "a1"), ("A", "a2"), ("B", "b1")]


def test_ranks_follow_level_fs_down_the_tree() -> None:
    # root: A used 400 of 500, B 100; S = 0.5 each: Level FS A = 0.5/0.8 = 0.625, B = 0.5/0.2 = 2.5 -> B first,
    # b1 takes rank 3 (3/3 = 1). In A: a1 0.5/0.75 = 0.667, a2 0.5/0.25 = 2 -> a2 rank 2 (2/3), a1 rank 1 (1/3)
    tree = Tree(ASSOCS)
    usage = {("A", "a1"): 300.0, ("A", "a2"): 100.0, ("B", "b1"): 100.0}
    assert level_fs(tree, ["A", "B"], usage, {"A": 400.0, "B": 100.0}) == {"A": 0.625, "B": 2.5}
    assert factors(tree, usage) == {("B", "b1"): 1.0, ("A", "a2"): 2 / 3, ("A", "a1"): 1 / 3}


def test_every_user_of_a_higher_account_ranks_above_the_lower_accounts_users() -> None:
    # A used 90 + 0 of 140 (Level FS 0.5/(90/140) = 0.78), B 50 (0.5/(50/140) = 1.4): b1 first although it
    # used 50 and a2 nothing; then a2 (infinite Level FS in A), then a1
    usage = {("A", "a1"): 90.0, ("B", "b1"): 50.0}
    got = factors(Tree(ASSOCS), usage)
    assert got[("B", "b1")] == 1.0 and got[("A", "a2")] == 2 / 3 and got[("A", "a1")] == 1 / 3


def test_ties() -> None:
    # no usage: every Level FS is infinite, A and B tie and their users are merged: all share rank 3
    assert set(factors(Tree(ASSOCS), {}).values()) == {1.0}
    # B unused first (rank 3); a1 and a2 tie (0.5/0.5 = 1): both take rank 2
    got = factors(Tree(ASSOCS), {("A", "a1"): 100.0, ("A", "a2"): 100.0})
    assert got == {("B", "b1"): 1.0, ("A", "a1"): 2 / 3, ("A", "a2"): 2 / 3}


def test_shares_and_sub_accounts() -> None:
    # phys 3 shares, chem 1 under root; theory and exp 1 each under phys: theory = 3/4 * 1/2
    tree = Tree([("theory", "t"), ("exp", "e"), ("chem", "c")],
                dict(parse_shares("phys=3,phys/theory=1,phys/exp=1,chem=1")))
    assert tree.entitlement("theory") == 0.375 and tree.entitlement("chem") == 0.25
    assert tree.top("theory") == "phys"
    # phys used 300 (all theory's) of 400 -> Level FS 0.75/0.75 = 1; chem 0.25/0.25 = 1: a tie, so their
    # children are sorted together, each against its own siblings: exp 0.5/0 = infinite, chem's user c 1/1 = 1,
    # theory 0.5/1 = 0.5 -> e (exp's only user, unused) rank 3, c rank 2, t rank 1
    got = factors(tree, {("theory", "t"): 300.0, ("chem", "c"): 100.0})
    assert got == {("exp", "e"): 1.0, ("chem", "c"): 2 / 3, ("theory", "t"): 1 / 3}


def test_billing_weights_and_max_tres() -> None:
    job = SimJob(0, "j", 0, 10, None)
    job.gpus, job.cpus, job.mem_gb = 2.0, 32, 64.0
    weights = parse_billing_weights("CPU=1,Mem=0.25G,GRES/gpu:h100=10")
    assert weights == (("cpu", 1.0), ("mem", 0.25), ("gres/gpu", 10.0))
    assert billing(Params(billing_weights=weights), job) == 32 + 16 + 20  # the sum
    assert billing(Params(billing_weights=weights, max_tres=True), job) == 32  # the largest
    assert billing(Params(), job) == 2  # default: GPU-seconds
    assert parse_billing_weights("Mem=1") == (("mem", 1024.0),)  # per MB without a unit
    with pytest.raises(SettingError):
        parse_billing_weights("disk=3")
    with pytest.raises(SettingError):
        parse_shares("phys")
