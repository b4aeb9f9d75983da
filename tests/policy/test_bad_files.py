# SPDX-License-Identifier: Apache-2.0
"""Every malformed policy in tests/policy/bad/ is rejected with the exact file:line:col and field."""

from __future__ import annotations

import os

import pytest

from slurm_gpu.errors import PolicyError
from slurm_gpu.policy import load_policy

BAD = os.path.join(os.path.dirname(__file__), "bad")

# file -> (location "file:line:col" of the offending token, field path, a word of the explanation)
CASES = {
    "bad_bool": ("bad_bool.yaml:15:14", "partitions.batch.default", "true or false"),
    "bad_class_option": ("bad_class_option.yaml:24:15", "classes.prod.options", "--requeue"),
    "bad_cpus_per_gpu": ("bad_cpus_per_gpu.yaml:25:17", "defaults.cpus_per_gpu", "topology"),
    "bad_duration_fields": ("bad_duration_fields.yaml:14:15", "partitions.batch.max_time", "D-HH:MM:SS"),
    "bad_duration_unit": ("bad_duration_unit.yaml:14:15", "partitions.batch.max_time", "'3w'"),
    "bad_fraction_mode": ("bad_fraction_mode.yaml:25:18", "isolation.fraction_mode", "mig-then-mps"),
    "bad_hostlist": ("bad_hostlist.yaml:10:12", "node_types.n8.nodes", "hostlist"),
    "bad_match_min_gpus": ("bad_match_min_gpus.yaml:22:23", "classes.prod.match.min_gpus", "integer"),
    "bad_mig_profile": ("bad_mig_profile.yaml:6:20", "gpu_types.h100.mig_profiles", "1g.10gb"),
    "bad_preempt_mode": ("bad_preempt_mode.yaml:20:19", "qos.normal.preempt_mode", "requeue, cancel, off"),
    "class_qos_not_allowed": ("class_qos_not_allowed.yaml:26:10", "classes.prod.qos", "partition batch"),
    "cycle_a": ("cycle_b.yaml:3:5", "include", "cycle cycle_a.yaml -> cycle_b.yaml -> cycle_a.yaml"),
    "cycle_b": ("cycle_a.yaml:2:11", "include", "acyclic"),
    "dangling_class_partition": ("dangling_class_partition.yaml:23:16", "classes.prod.partition",
                                 "did you mean 'batch'?"),
    "dangling_default_qos": ("dangling_default_qos.yaml:16:18", "partitions.batch.default_qos",
                             "did you mean 'normal'?"),
    "dangling_gpu_type": ("dangling_gpu_type.yaml:8:15", "node_types.n8.gpu_type", "'v100'"),
    "dangling_node_type": ("dangling_node_type.yaml:13:17", "partitions.batch.node_types", "'n9'"),
    "default_time_over_max": ("default_time_over_max.yaml:15:19", "partitions.batch.default_time", "1440 min"),
    "duplicate_partition": ("duplicate_partition.yaml:17:11", "partitions.batch.name",
                            "duplicate_partition.yaml:12:11"),
    "duplicate_yaml_key": ("duplicate_yaml_key.yaml:16:5", "partitions.batch.default", "duplicate key"),
    "empty": ("empty.yaml:1:1", "(top level)", "version: 1"),
    "include_missing": ("include_missing.yaml:2:11", "include", "nope.yaml"),
    "message_bad_placeholder": ("message_bad_placeholder.yaml:25:13", "messages.no_class", "{usr}"),
    "message_unknown_key": ("message_unknown_key.yaml:25:3", "messages.no_clas", "did you mean 'no_class'?"),
    "mig_without_capable": ("mig_without_capable.yaml:5:19", "gpu_types.h100.mig_profiles", "mig_capable"),
    "missing_class_name": ("missing_class_name.yaml:21:5", "classes[0].name", "missing key"),
    "negative_gpus": ("negative_gpus.yaml:9:11", "node_types.n8.gpus", "found -1"),
    "section_not_list": ("section_not_list.yaml:17:6", "qos", "a list"),
    "two_default_partitions": ("two_default_partitions.yaml:19:14", "partitions.other.default", "one default"),
    "unknown_key_max_tme": ("unknown_key_max_tme.yaml:14:5", "partitions.batch.max_tme", "did you mean 'max_time'?"),
    "unknown_match_key": ("unknown_match_key.yaml:22:13", "classes.prod.match.min_gpu", "did you mean 'min_gpus'?"),
    "unknown_top_key": ("unknown_top_key.yaml:2:1", "gpu_tpyes", "did you mean 'gpu_types'?"),
    "version_missing": ("version_missing.yaml:1:1", "version", "version: 1"),
    "version_wrong": ("version_wrong.yaml:1:10", "version", "found 2"),
    "wrong_type_memory": ("wrong_type_memory.yaml:4:16", "gpu_types.h100.memory_gb", "found 'lots'"),
    "yaml_syntax_flow": ("yaml_syntax_flow.yaml:14:13", "yaml", "valid YAML"),
}


def test_every_bad_file_has_a_case() -> None:
    files = {f[:-5] for f in os.listdir(BAD) if f.endswith(".yaml")}
    assert files - {"many_problems"} == set(CASES)
    assert len(CASES) >= 25


@pytest.mark.parametrize("name", sorted(CASES), ids=sorted(CASES))
def test_bad_policy_names_file_line_and_field(name: str) -> None:
    where, fieldname, detail = CASES[name]
    with pytest.raises(PolicyError) as info:
        load_policy(os.path.join(BAD, name + ".yaml"))
    found = f"{where}: {fieldname}: found "
    hits = [p for p in info.value.problems if f"{os.sep}{found}" in p or p.startswith(found)]
    assert hits, info.value.problems
    assert detail in hits[0]
    assert "allowed" in hits[0]


def test_all_problems_are_collected_together() -> None:
    with pytest.raises(PolicyError) as info:
        load_policy(os.path.join(BAD, "many_problems.yaml"))
    text = "\n".join(info.value.problems)
    for where in ("many_problems.yaml:4:16: gpu_types.h100.memory_gb", "many_problems.yaml:5:5: gpu_types.h100.colour",
                  "many_problems.yaml:9:15: partitions.p.max_time", "many_problems.yaml:8:17: partitions.p.node_types"):
        assert where in text
