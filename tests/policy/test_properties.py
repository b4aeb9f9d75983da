# SPDX-License-Identifier: Apache-2.0
"""Hypothesis: the classifier is total and deterministic, and typed-GPU limits cannot be dodged."""

from __future__ import annotations

import glob
import os
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_gpu.policy import check_policy, classify, load_policy
from slurm_gpu.policy.nodes import policy_inventory
from slurm_gpu.request import JobRequest

EX = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "policies")
POLICIES = {os.path.basename(p): load_policy(p) for p in sorted(glob.glob(os.path.join(EX, "*.yaml")))
            if "hardware" not in p}

small = st.one_of(st.none(), st.integers(-2, 40))
words = st.one_of(st.none(), st.sampled_from(["h100", "a100", "v100", "", "batch", "spot", "mig", "normal",
                                              "debug", "high", "sweep", "train", "prod", "gpu", "x"]))
requests = st.fixed_dictionaries(dict(
    gpus=small, gpus_per_node=small, gpus_per_task=small, gpus_per_socket=small, ntasks_per_gpu=small,
    gpu_type=words, gpu_fraction=st.one_of(st.none(), st.floats(-1, 2), st.just(float("nan"))),
    mig_profile=st.one_of(st.none(), st.sampled_from(["1g.10gb", "3g.40gb", "7g.80gb", "bogus"])),
    nodes=small, ntasks=small, time_limit_min=st.one_of(st.none(), st.integers(-5, 20000)),
    partition=words, qos=words, account=st.one_of(st.none(), st.sampled_from(["hpc-priority", "prod-retrain", "x"])),
    job_class=st.one_of(st.none(), st.sampled_from(["spot", "sweep", "dev", "nope", "mig-small", "notebook"])),
    array=st.one_of(st.none(), st.just("0-9")), interactive=st.booleans(),
    model_params=st.one_of(st.none(), st.floats(-1, 2e11, allow_nan=False)),
    precision=st.one_of(st.none(), st.sampled_from(["bf16", "fp32", "int3"])),
    optimizer=st.one_of(st.none(), st.sampled_from(["adam", "sgd", "none", "lion"])),
)).map(lambda kw: JobRequest(**kw))
names = st.sampled_from(sorted(POLICIES))


@settings(max_examples=400, deadline=None, database=None)
@given(names, requests)
def test_total_and_deterministic(pname: str, req: JobRequest) -> None:
    pol = POLICIES[pname]
    d = classify(req, pol)
    assert d == classify(req, pol)
    assert d.reasons
    if d.accepted:
        assert d.message is None and d.partition and pol.partition(d.partition)
    else:
        assert d.message and not d.message.startswith("internal classifier error"), d.message


@settings(max_examples=400, deadline=None, database=None)
@given(names, requests)
def test_typed_gpu_enforcement(pname: str, req: JobRequest) -> None:
    pol = POLICIES[pname]
    d = classify(req, pol)
    if not d.accepted or not d.gres or d.gres.startswith("mps:"):
        return
    m = re.fullmatch(r"gpu:([a-z0-9]+)(_[0-9]g\.[0-9]+gb)?:(\d+)", d.gres)
    if m is None and re.fullmatch(r"gpu:\d+", d.gres) and not req.gpu_type:
        # left untyped only where no single GPU type of the partition has the nodes the job needs, each with
        # its GPUs per node (issue 19: typing it would make a job unschedulable that sbatch starts)
        assert any("stays untyped" in x for x in d.reasons), d.reasons
        per_node = max(req.gpus_per_node or 1, 1)
        held = {t: sum(1 for n in policy_inventory(pol).nodes if d.partition in n.partitions
                       and n.count("gpu", t) >= per_node) for t in pol.partition_gpu_types(d.partition)}
        assert all(c < max(req.node_min or 1, 1) for c in held.values()), (held, req)
        return
    assert m and pol.gpu_type(m.group(1)) is not None and m.group(1) == d.gpu_type
    assert m.group(1) in pol.partition_gpu_types(d.partition)
    q = pol.qos_named(d.qos)
    if q is not None and q.max_gpus_per_job is not None:
        assert d.gpus <= q.max_gpus_per_job
    # an untyped request lands exactly where the same request typed with the resolved type lands
    if not req.gpu_type and not m.group(2):
        typed = classify(JobRequest(**{**req.to_dict(), "gpu_type": d.gpu_type}), pol)
        assert (typed.accepted, typed.partition, typed.qos, typed.gres) == (True, d.partition, d.qos, d.gres)


def test_every_example_policy_is_valid_without_warnings() -> None:
    for path in glob.glob(os.path.join(EX, "*.yaml")):
        r = check_policy(path)
        assert r.ok, r.errors
        if "hardware" not in path:
            assert r.warnings == (), r.warnings


REACH = {
    "university.yaml": {
        "mig-small": JobRequest(gpu_fraction=0.25),
        "interactive": JobRequest(gpus=1, gpu_type="a100", interactive=True),
        "debug": JobRequest(gpus=1, time_limit_min=20),
        "spot": JobRequest(gpus=2, gpu_type="h100", job_class="spot"),
        "priority": JobRequest(gpus=4, account="hpc-priority"),
        "production": JobRequest(gpus=4),
    },
    "ailab.yaml": {
        "retrain": JobRequest(gpus=8, account="prod-retrain"),
        "sweep": JobRequest(gpus=1, array="0-99%10"),
        "dev": JobRequest(gpus=1, interactive=True),
        "spot": JobRequest(gpus=4, gpu_type="h100", job_class="spot"),
        "train": JobRequest(gpus=8),
    },
    "fabric-lab.yaml": {
        "multinode": JobRequest(gpus_per_node=4, nodes=2),
        "single": JobRequest(gpus=1),
    },
    "smallgroup.yaml": {
        "notebook": JobRequest(gpu_fraction=0.3, interactive=True),
        "short": JobRequest(gpus=1, time_limit_min=60),
        "normal": JobRequest(gpus=2, time_limit_min=600),
    },
}


def test_every_class_is_reachable() -> None:
    assert set(REACH) == set(POLICIES)
    for pname, cases in REACH.items():
        pol = POLICIES[pname]
        assert set(cases) == {c.name for c in pol.classes}
        for cname, req in cases.items():
            d = classify(req, pol)
            assert d.accepted and d.job_class == cname, (pname, cname, d.message)
            # only opt-in classes need --class
            assert (req.job_class is not None) == pol.job_class(cname).match.explicit
