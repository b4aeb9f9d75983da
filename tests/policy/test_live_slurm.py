# SPDX-License-Identifier: Apache-2.0
"""Against the real lab (slurm-gpu lab up): `gpusub --explain` agrees with where the job lands, and
`policy check` compares the policy with the live partitions/QOS/GPU types."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slurm
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
POLICY = os.path.join(ROOT, "examples", "policies", "university.yaml")
SCRIPT = os.path.join(ROOT, "tests", "policy", "data", "plain-job.sh")  # no #SBATCH lines of its own


@pytest.fixture(scope="module")
def lab_env(slurm_lab) -> dict[str, str]:
    """The lab's client environment (the session fixture brings the lab up; it never skips)."""
    return dict(os.environ) | slurm_lab.env() | {"PATH": f"{BIN}:{os.environ.get('PATH', '')}"}


CASES = [
    pytest.param(["--gpus=h100:2", "--time=10"], id="debug"),
    pytest.param(["--gres=gpu:a100:1"], id="typed-a100"),
    pytest.param(["--gpus=h100:16", "--account=hpc-priority", "--time=1:00:00"], id="priority"),
    pytest.param(["--class=spot", "--gpus=a100:2"], id="spot"),
    pytest.param(["--gpus=2", "--time=02:00:00"], id="untyped-production"),
    pytest.param(["--gres=gpu:2", "--time=02:00:00"], id="untyped-gres"),
]


@pytest.mark.parametrize("opts", CASES)
def test_explain_agrees_with_slurm(lab_env, opts) -> None:
    gpusub = os.path.join(BIN, "gpusub")
    ex = subprocess.run([gpusub, "--explain", "--json", "--policy", POLICY, *opts, SCRIPT],
                        capture_output=True, text=True, env=lab_env, timeout=60)
    decision = json.loads(ex.stdout)
    assert ex.returncode == 0 and decision["accepted"], ex.stdout + ex.stderr
    sub = subprocess.run([gpusub, "--hold", "--policy", POLICY, *opts, SCRIPT], capture_output=True, text=True,
                         env=lab_env, timeout=60)
    if sub.returncode != 0 and "Invalid account" in sub.stderr:
        pytest.skip(f"account not in the lab's accounting: {sub.stderr.strip()}")
    assert sub.returncode == 0, sub.stderr
    job_id = re.findall(r"\d+", sub.stdout)[-1]
    try:
        from slurm_gpu.lab.clients import job_records

        (fields,) = job_records(lab_env["SLURM_CONF"], job_id)  # the one job reader (squeue's JSON)
        assert fields["Partition"] == decision["partition"]
        assert fields["QOS"] == decision["qos"]
        # The user's own GPU form is kept (per job for --gpus, per node for --gres), typed by the policy.
        # Slurm 22.05 spells it "gres:gpu:h100:2", 23.11+ "gres/gpu:h100:2".
        gtype = decision["gres"].split(":")[1]
        per_job = any(o.startswith("--gpus=") for o in opts)
        field = "TresPerJob" if per_job else "TresPerNode"
        wanted = next(o.split("=", 1)[1] for o in opts if o.startswith(("--gpus=", "--gres=")))
        count = wanted.rsplit(":", 1)[-1]
        assert re.sub(r"^gres[:/]", "", fields[field]) == f"gpu:{gtype}:{count}", fields[field]
        assert ("TresPerNode" if per_job else "TresPerJob") not in fields
    finally:
        subprocess.run(["scancel", job_id], env=lab_env, timeout=30)


def test_policy_check_live(lab_env) -> None:
    cli = os.path.join(BIN, "slurm-gpu")
    uni = subprocess.run([cli, "policy", "check", "--json", POLICY], capture_output=True, text=True,
                         env=lab_env, timeout=60)
    assert uni.returncode == 0, uni.stderr
    # the only warnings: MIG slices the policy routes fractions to that no node of the partition has,
    # each checked against Slurm's own node records
    nodes = subprocess.run(["scontrol", "show", "node", "-o"], capture_output=True, text=True, env=lab_env,
                           timeout=30, check=True).stdout
    for w in json.loads(uni.stdout)["warnings"]:
        m = re.match(r"partitions\.(\S+): the policy routes GPU fractions to MIG slices (.*) that no node of "
                     r"the partition offers", w)
        assert m, w
        in_part = [line for line in nodes.splitlines() if re.search(rf"Partitions=\S*\b{m.group(1)}\b", line)]
        for slice_type in m.group(2).split(", "):
            assert in_part and not any(f"gpu:{slice_type}:" in line for line in in_part), (w, in_part)
    mig_nodes = [line for line in nodes.splitlines() if re.search(r"Partitions=\S*\bmig\b", line)]
    if not any("gpu:a100_" in line for line in mig_nodes):  # the lab's a100 node without MIG slices
        assert any(w.startswith("partitions.mig: the policy routes GPU fractions to MIG slices a100_1g.10gb")
                   for w in json.loads(uni.stdout)["warnings"]), uni.stdout
    ai = subprocess.run([cli, "policy", "check", "--json", os.path.join(ROOT, "examples", "policies", "ailab.yaml")],
                        capture_output=True, text=True, env=lab_env, timeout=60)
    warnings = json.loads(ai.stdout)["warnings"]
    assert "partitions.prod: not a partition of the live cluster (scontrol show partition)" in warnings
    assert "qos.sweep: not a QOS of the live cluster (sacctmgr show qos)" in warnings
