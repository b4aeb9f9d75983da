# SPDX-License-Identifier: Apache-2.0
"""Classifier: table of requests against the example policies (expected values read off the YAML)."""

from __future__ import annotations

import os

import pytest

from slurm_gpu.policy import classify, explain_lines, load_policy
from slurm_gpu.request import JobRequest as J

EX = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "policies")


@pytest.fixture(scope="module")
def uni():
    return load_policy(os.path.join(EX, "university.yaml"))


ACCEPT = [
    # request, class, partition, qos, gres
    ("untyped-batch", J(gpus=2, time_limit_min=600), "production", "batch", "normal", "gpu:h100:2"),
    ("typed-a100", J(gpus=2, gpu_type="a100"), "production", "batch", "normal", "gpu:a100:2"),
    ("priority-2-nodes", J(gpus=16, account="hpc-priority"), "priority", "batch", "high", "gpu:h100:8"),
    ("interactive", J(gpus=1, interactive=True), "interactive", "interactive", "normal", "gpu:a100:1"),
    ("debug-cpu", J(time_limit_min=20), "debug", "interactive", "debug", None),
    ("mig", J(gpu_fraction=0.25), "mig-small", "mig", "normal", "gpu:a100_2g.20gb:1"),
    ("mig-1g", J(gpu_fraction=0.1), "mig-small", "mig", "normal", "gpu:a100_1g.10gb:1"),
    ("spot-opt-in", J(gpus=2, gpu_type="h100", job_class="spot"), "spot", "spot", "spot", "gpu:h100:2"),
    ("spot-by-partition", J(gpus=2, gpu_type="a100", partition="spot"), "spot", "spot", "spot", "gpu:a100:2"),
    ("vram-7b", J(model_params=7e9), "production", "batch", "normal", "gpu:a100:2"),
    ("per-node", J(gpus_per_node=4, nodes=2, gpu_type="h100", account="hpc-priority"), "priority", "batch",
     "high", "gpu:h100:4"),
]


@pytest.mark.parametrize("req,cls,part,qos,gres", [a[1:] for a in ACCEPT], ids=[a[0] for a in ACCEPT])
def test_accept(uni, req, cls, part, qos, gres) -> None:
    d = classify(req, uni)
    assert d.accepted, d.message
    assert (d.job_class, d.partition, d.qos, d.gres) == (cls, part, qos, gres)
    assert d.reasons and d.message is None


REJECT = [
    # request, words in message, words in fix
    ("over-qos", J(gpus=16), "exceeds QOS normal limit of 8", "--gpus=h100:8"),
    ("untyped-multi-type", J(gpus=2, job_class="spot"), "several GPU types", "--gpus="),
    ("unknown-type", J(gpus=1, gpu_type="v100"), "unknown GPU type 'v100'", "did you mean 'h100'?"),
    ("too-long", J(gpus=1, time_limit_min=3 * 1440), "exceeds the partition batch limit", "--time=2-00:00:00"),
    ("cpu-only-long", J(time_limit_min=600), "GPU jobs only", "--class spot"),
    ("bad-qos", J(gpus=1, qos="spot"), "QOS spot is not allowed in partition batch", "normal, high"),
    ("unknown-class", J(gpus=1, job_class="sweeep"), "unknown job class", "classes:"),
    ("unknown-partition", J(gpus=1, partition="btach"), "unknown partition", "did you mean 'batch'?"),
    ("fraction-and-gpus", J(gpus=1, gpu_fraction=0.5), "invalid request", "either"),
    ("vram-70b", J(model_params=70e9), "does not fit", "--gpus"),
    ("class-refuses", J(gpus=0, job_class="spot"), "does not accept", "drop --class spot"),
]


@pytest.mark.parametrize("req,msg,fix", [r[1:] for r in REJECT], ids=[r[0] for r in REJECT])
def test_reject(uni, req, msg, fix) -> None:
    d = classify(req, uni)
    assert not d.accepted
    assert msg in d.message
    assert fix in (d.fix or "")
    assert d.reasons[-1].startswith("rejected:")


def test_added_options_and_checkpointing(uni) -> None:
    d = classify(J(gpus=2, gpu_type="h100", job_class="spot"), uni)
    # the user's own --gpus stays: the policy adds no second GPU count form
    assert d.added_options[:2] == ("--partition=spot", "--qos=spot") and d.gres == "gpu:h100:2"
    assert not any(o.startswith(("--gres", "--gpus", "--nodes")) for o in d.added_options)
    assert "--requeue" in d.added_options and "--signal=B:USR2@120" in d.added_options  # defaults.ckpt_signal
    assert any("preemptible" in w for w in d.warnings)


def test_gpus_the_policy_chose_are_added(uni) -> None:
    d = classify(J(model_params=7e9, precision="bf16", optimizer="adam"), uni)  # no GPU option: the VRAM fit
    assert d.accepted and any(o.startswith("--gres=gpu:") for o in d.added_options), d.added_options


def test_user_partition_and_qos_kept_without_duplicates(uni) -> None:
    d = classify(J(gpus=1, gpu_type="h100", partition="batch", qos="normal", time_limit_min=60), uni)
    assert d.accepted
    assert not any(o.startswith(("--partition", "--qos")) for o in d.added_options)


def test_site_message_is_used(uni) -> None:
    d = classify(J(gpus=2, job_class="spot"), uni)
    assert d.message == "partition spot has several GPU types; name one, e.g. --gpus=a100:2 or --gpus=h100:2"


def test_explain_lines(uni) -> None:
    ok = explain_lines(classify(J(gpus=2, gpu_type="h100"), uni))
    assert ok[0] == "accepted: class production, partition batch, qos normal, gres gpu:h100:2"
    assert "why:" in ok
    bad = explain_lines(classify(J(gpus=16), uni))
    assert bad[0].startswith("rejected: 16 GPUs exceeds") and bad[1].startswith("fix: ")


def test_json_contract(uni) -> None:
    js = classify(J(gpus=1, gpu_type="a100"), uni).to_json()
    assert set(js) >= {"accepted", "class", "partition", "qos", "gres", "added_options", "warnings", "reasons",
                       "message"}


def test_uneven_gpus_over_nodes_are_accepted_as_sbatch_accepts_them(uni):
    # sbatch takes --gpus=9 on 8-GPU nodes (slurmctld splits 8 + 1): refusing it would refuse a job sbatch starts
    d = classify(J(gpus=9, account="hpc-priority"), uni)
    assert d.accepted and any("unevenly" in r for r in d.reasons)


def test_a_mig_slice_named_as_its_gres_type_is_a_fraction(uni) -> None:
    # university: a100 offers 1g.10gb..7g.80gb, isolation allows 1g/2g/3g, fraction_mode mig, class
    # mig-small (gpu_fraction: true) maps to partition mig, QOS normal
    r = J(gpus_per_node=1, gpu_type="a100_1g.10gb", gpu_types=("a100_1g.10gb",),
          gpus_per_node_by_type=(("a100_1g.10gb", 1),))
    d = classify(r, uni)
    assert (d.accepted, d.job_class, d.partition, d.qos, d.gres) == (True, "mig-small", "mig", "normal",
                                                                      "gpu:a100_1g.10gb:1")
    assert not any(o.startswith("--gres") for o in d.added_options)  # the user's own option stays
    two = r._replace(gpus_per_node=2, gpus_per_node_by_type=(("a100_1g.10gb", 2),))
    assert "one MIG slice" in (classify(two, uni).fix or "")
    big = r._replace(gpu_type="a100_7g.80gb", gpu_types=("a100_7g.80gb",),
                     gpus_per_node_by_type=(("a100_7g.80gb", 1),))  # 7/7: not an allowed profile
    assert classify(big, uni).message == ("a GPU fraction of 1.0 cannot be served: no allowed MIG profile in "
                                          "partition mig covers it")
    unknown = r._replace(gpu_type="h100_1g.10gb", gpu_types=("h100_1g.10gb",),
                         gpus_per_node_by_type=(("h100_1g.10gb", 1),))  # h100 offers no profile here
    assert classify(unknown, uni).message == "unknown GPU type 'h100_1g.10gb'"
