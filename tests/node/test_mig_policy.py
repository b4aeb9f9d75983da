# SPDX-License-Identifier: Apache-2.0
"""Policy: node types' mig_mode / mig_layout are validated; a job's MIG request is checked against them."""

from __future__ import annotations

import pytest

from slurm_gpu.policy import check_policy, load_policy
from slurm_gpu.sharing import mig as M
from slurm_gpu.sharing.token import decode

BASE = """\
version: 1
name: t
gpu_types:
  - name: a100
    memory_gb: 80
    mig_capable: true
    mig_profiles: [1g.10gb, 2g.20gb, 3g.40gb, 7g.80gb]
  - name: l40s
    memory_gb: 48
node_types:
  - name: dyn
    topology: none.yaml
    gpu_type: a100
    gpus: 4
    nodes: d[1-2]
    mig_mode: dynamic
  - name: fixed
    topology: none.yaml
    gpu_type: a100
    gpus: 4
    nodes: s1
    mig_mode: static
    mig_layout: [3g.40gb, 2g.20gb, 2g.20gb]
  - name: plain
    topology: none.yaml
    gpu_type: l40s
    gpus: 2
    nodes: p1
partitions:
  - name: batch
    node_types: [dyn, fixed, plain]
    default: true
isolation:
  mig_profiles: [1g.10gb, 3g.40gb, 2g.20gb]
"""


def write(tmp_path, text):
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return str(path)


def test_modes_load_and_give_the_default_layouts(tmp_path):
    pol = load_policy(write(tmp_path, BASE))
    dyn, fixed, plain = (M.node_type_of(pol, n) for n in ("d2", "s1", "p1"))
    assert (dyn.mig_mode, fixed.mig_mode, plain.mig_mode) == ("dynamic", "static", "none")
    assert M.default_layout(dyn) == M.Layout(False)
    assert M.default_layout(fixed) == M.Layout(True, (("2g.20gb", 2), ("3g.40gb", 1)))
    assert M.default_layout(plain) is None
    assert M.node_type_of(pol, "nowhere") is None


def test_check_request_against_the_policy(tmp_path):
    pol = load_policy(write(tmp_path, BASE))
    dyn, fixed = M.node_type_of(pol, "d1"), M.node_type_of(pol, "s1")
    req = decode("slurm-gpu:mig=3g.40gb:2")
    assert M.check_request(req.mig, pol, dyn) == M.Layout(True, (("3g.40gb", 2),))
    with pytest.raises(M.MigError, match="not offered.*allowed: 1g.10gb, 2g.20gb, 3g.40gb"):
        M.check_request(decode("slurm-gpu:mig=7g.80gb").mig, pol, dyn)  # the GPU type has it, isolation not
    with pytest.raises(M.MigError, match="not offered"):
        M.check_request(decode("slurm-gpu:mig=4g.40gb").mig, pol, dyn)
    with pytest.raises(M.MigError, match="9 compute slices"):
        M.check_request(decode("slurm-gpu:mig=3g.40gb:3").mig, pol, dyn)
    with pytest.raises(M.MigError, match="mig_mode static"):
        M.check_request(req.mig, pol, fixed)


@pytest.mark.parametrize(("old", "new", "error"), [
    ("    mig_mode: dynamic\n", "    mig_mode: dynamic\n    mig_layout: [4g.40gb]\n", "mig_layout: found '4g.40gb'"),
    ("    mig_layout: [3g.40gb, 2g.20gb, 2g.20gb]\n", "    mig_layout: [3g.40gb, 3g.40gb, 2g.20gb]\n",
     "found 8 compute slices"),
    ("    mig_layout: [3g.40gb, 2g.20gb, 2g.20gb]\n", "", "static without a mig_layout"),
    ("    nodes: p1\n", "    nodes: p1\n    mig_mode: dynamic\n", "not mig_capable"),
    ("    nodes: p1\n", "    nodes: p1\n    mig_layout: [1g.10gb]\n", "with mig_mode none"),
    ("    mig_mode: dynamic\n", "    mig_mode: sometimes\n", "mig_mode"),
    ("    mig_mode: dynamic\n", "    mig_mode: dynamic\n    mig_layout: [a100_1g.10gb]\n", "mig_layout"),
])
def test_bad_mig_modes_are_reported_with_file_and_line(tmp_path, old, new, error):
    assert old in BASE
    result = check_policy(write(tmp_path, BASE.replace(old, new, 1)))
    assert result.policy is None
    text = "\n".join(result.errors)
    assert error in text and "policy.yaml:" in text, text
