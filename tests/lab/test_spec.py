# SPDX-License-Identifier: Apache-2.0
"""The lab spec built from the real lab policy and topology files (pure; no Slurm).

Expected values are read from the YAML files themselves (facts), not from the code under test."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from slurm_gpu.hostlist import expand_hostlist
from slurm_gpu.lab.control import default_policy_path, policy_spec_factory

POLICY = default_policy_path()


def raw():
    return yaml.safe_load(Path(POLICY).read_text())


def test_policy_file_is_found():
    assert POLICY.endswith("examples/policies/university.yaml") and Path(POLICY).is_file()


def test_nodes_and_features_from_policy():
    spec = policy_spec_factory(POLICY)("/dev")
    doc = raw()
    want = [n for nt in doc["node_types"] for n in expand_hostlist(nt["nodes"])]
    assert list(spec.node_names) == want
    mig_types = {g["name"] for g in doc["gpu_types"] if g.get("mig_capable")}
    for node in spec.nodes:
        assert node.conf_line.startswith(f"NodeName={node.name} ")
        assert node.gpu_type in node.features
        assert ("mig" in node.features) == (node.gpu_type in mig_types)
        if node.mig_layout:  # static MIG (a100mig1): the node's GPUs are its slices, one gres type each
            assert f"Gres=gpu:{node.gpu_type}_{node.mig_layout[0]}:" in node.conf_line
        else:
            assert f"Gres=gpu:{node.gpu_type}:{node.gpus}" in node.conf_line
    assert [n.name for n in spec.static_mig_nodes] == [n for nt in doc["node_types"] if nt.get("mig_mode") == "static"
                                                       for n in expand_hostlist(nt["nodes"])] == ["a100mig1"]


def test_gres_lines_follow_topology_sockets():
    """h100x8: GPUs 0-3 on cores 0-15, 4-7 on 16-31; a100x4: GPUs 0-1 on socket 1 (16-31), 2-3 on 0."""
    spec = policy_spec_factory(POLICY)("/dev")
    lines = {
        (re.search(r"Type=(\w+)", ln).group(1), re.search(r"File=(\S+)", ln).group(1)): re.search(
            r"Cores=(\S+)", ln
        ).group(1)
        for ln in spec.gres_lines if " File=" in ln  # static MIG lines give MultipleFiles=
    }
    assert lines[("h100", "/dev/nvidia[0-3]")] == "0-15"
    assert lines[("h100", "/dev/nvidia[4-7]")] == "16-31"
    assert lines[("a100", "/dev/nvidia[0-1]")] == "16-31"
    assert lines[("a100", "/dev/nvidia[2-3]")] == "0-15"


def test_device_dir_is_used():
    spec = policy_spec_factory(POLICY)("/tmp/lab/dev")
    assert all(re.search(r" (Multiple)?Files?=/tmp/lab/dev/nvidia", ln) for ln in spec.gres_lines)


def test_partitions_and_qos_from_policy():
    spec = policy_spec_factory(POLICY)("/dev")
    doc = raw()
    assert [p.name for p in spec.partitions] == [p["name"] for p in doc["partitions"]]
    assert [q.name for q in spec.qos] == [q["name"] for q in doc["qos"]]
    for p_doc, p in zip(doc["partitions"], spec.partitions, strict=True):
        assert p.preemptible == bool(p_doc.get("preemptible", False))
        assert p.default == bool(p_doc.get("default", False))
        assert p.priority_tier == p_doc["priority_tier"]
        types = p_doc["node_types"]
        want = [n for nt in doc["node_types"] if nt["name"] in types for n in expand_hostlist(nt["nodes"])]
        assert sorted(spec.partition_nodes(p)) == sorted(want)
    for q_doc, q in zip(doc["qos"], spec.qos, strict=True):
        assert q.priority == q_doc.get("priority", 0)
        assert q.max_gpus_per_user == q_doc.get("max_gpus_per_user")


def test_accounts_named_by_policy_classes_exist_in_the_lab():
    spec = policy_spec_factory(POLICY)("/dev")
    want = {a for c in raw().get("classes", []) for a in (c.get("match") or {}).get("accounts", [])}
    assert set(spec.extra_accounts) == want - {spec.account}


def test_static_mig_node_detected_alike_follows_the_release():
    """A static-MIG node runs AutoDetect=nvml only where the release's gpu/nvml names its slices as the policy
    does (release.py mig_profile_from_attributes): examples/policies/mig/university-mig.yaml's a100n2 holds
    3g.40gb (detected as 3g.39gb by 22.05, from the memory), the lab's a100mig1 only 2g.20gb and 1g.10gb."""
    from slurm_gpu.lab.spec import detected_alike

    mig = policy_spec_factory(str(Path(POLICY).parent / "mig" / "university-mig.yaml"))("/dev")
    (a100n2,) = mig.static_mig_nodes
    assert "3g.40gb" in a100n2.mig_layout and a100n2.gpu_memory_gb == 80
    assert not detected_alike(a100n2, from_attributes=True) and detected_alike(a100n2, from_attributes=False)
    (a100mig1,) = policy_spec_factory(POLICY)("/dev").static_mig_nodes
    assert detected_alike(a100mig1, from_attributes=True) and detected_alike(a100mig1, from_attributes=False)


def test_whole_gpu_nodes_detected_alike_by_the_recorded_name():
    """A whole-GPU node runs AutoDetect=nvml when the type Slurm's gpu/nvml gives its recorded GPU name
    (lower-cased, spaces as _) contains the policy's type; a static-MIG node is judged by its slices, and a
    node of no recorded name keeps the emitted lines."""
    from dataclasses import replace

    from slurm_gpu.lab.spec import whole_gpus_detected_alike

    spec = policy_spec_factory(POLICY)("/dev")
    by_name = {n.name: n for n in spec.nodes}
    assert by_name["h100n1"].gpu_name == "NVIDIA H100 80GB HBM3"
    assert [n.name for n in spec.nodes if whole_gpus_detected_alike(n)] == ["h100n1", "h100n2", "a100n1"]
    assert not whole_gpus_detected_alike(replace(by_name["h100n1"], gpu_type="gh200"))
    assert not whole_gpus_detected_alike(replace(by_name["h100n1"], gpu_name=""))
    assert not whole_gpus_detected_alike(by_name["a100mig1"])
