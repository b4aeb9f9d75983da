# SPDX-License-Identifier: Apache-2.0
"""Durations, VRAM estimate, YAML marks, includes, lint warnings, cache, inventory parsing."""

from __future__ import annotations

import os
import textwrap

import pytest

from slurm_gpu.adapters.policy_cache import load_policy_cached
from slurm_gpu.adapters.slurm.inventory import parse_gres_types, parse_partitions
from slurm_gpu.policy import check_policy, load_policy
from slurm_gpu.policy.durations import format_duration_min, parse_duration_min, parse_duration_s
from slurm_gpu.policy.lint import live_warnings
from slurm_gpu.policy.vram import estimate_vram, fit_vram, parse_param_count
from slurm_gpu.policy.yamlload import YamlSyntaxError, parse_yaml

EX = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "policies")


@pytest.mark.parametrize("text,minutes", [
    (30, 30), ("30", 30), ("5:30", 6), ("2:00:00", 120), ("1-0", 1440), ("1-02", 1560), ("1-02:30", 1590),
    ("2-00:00:01", 2881), ("90s", 2), ("30m", 30), ("4h", 240), ("2d", 2880), ("0", 0),
], ids=str)
def test_durations(text, minutes) -> None:
    assert parse_duration_min(text) == minutes


@pytest.mark.parametrize("bad", ["", "3w", "1:2:3:4", "25:99:00", "1-24", "abc", -5, True, 1.5, "1:60"], ids=str)
def test_bad_durations(bad) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration_s(bad)


def test_format_duration() -> None:
    assert format_duration_min(90) == "01:30:00" and format_duration_min(2880) == "2-00:00:00"


def test_vram_bytes_per_param() -> None:
    # bf16 + Adam: 2 weights + 2 grads + 12 (fp32 master + 2 moments)
    assert estimate_vram(7e9, "bf16", "adam").bytes_per_param == 16
    assert estimate_vram(1e9, "fp32", "adam").bytes_per_param == 16
    assert estimate_vram(1e9, "fp16", "sgd").bytes_per_param == 12
    assert estimate_vram(1e9, "fp32", "sgd").bytes_per_param == 12
    assert estimate_vram(1e9, "bf16", "none").bytes_per_param == 2
    e = estimate_vram(7e9)
    assert e.state_gb == pytest.approx(112.0)
    assert e.per_gpu_gb(1) == pytest.approx(142.0) and e.per_gpu_gb(2) == pytest.approx(72.0)
    with pytest.raises(ValueError, match="precision"):
        estimate_vram(1e9, "int3")


def test_param_count() -> None:
    assert parse_param_count("7B") == 7e9 and parse_param_count("350M") == 3.5e8
    assert parse_param_count("1.3e9") == 1.3e9
    with pytest.raises(ValueError, match="7B"):
        parse_param_count("lots")


def test_vram_fit_smallest() -> None:
    pol = load_policy(os.path.join(EX, "university.yaml"))
    small = fit_vram(pol, estimate_vram(1e9))  # 16 GB + 25 % + 2 GB = 22 GB: one GPU
    assert (small.gpus, small.gpu_type, small.suggestions) == (1, "a100", ())
    big = fit_vram(pol, estimate_vram(7e9))
    assert (big.gpus, big.gpu_type) == (2, "a100") and "FSDP" in big.suggestions[0]
    assert fit_vram(pol, estimate_vram(70e9)) is None


def test_yaml_marks_and_sexagesimal() -> None:
    root = parse_yaml("a: 4:00:00\nb:\n  - x\n  - 5\n")
    assert root.keys["a"][1].value == "4:00:00"
    item = root.keys["b"][1].items[1]
    assert (item.line, item.col, item.value) == (4, 5, 5)
    with pytest.raises(YamlSyntaxError) as info:
        parse_yaml("a: [1\n")
    assert info.value.line == 2


def _write(tmp_path, name, text) -> str:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


BASE = """\
    version: 1
    gpu_types: [{name: h100, memory_gb: 80}]
    node_types: [{name: n8, topology: t.yaml, gpu_type: h100, gpus: 8, nodes: "n[1-2]"}]
    partitions: [{name: batch, node_types: [n8], default: true, default_qos: normal}]
    qos: [{name: normal, max_gpus_per_job: 8}]
    """


def test_include_merge_and_topology_path(tmp_path) -> None:
    (tmp_path / "sub").mkdir()
    _write(tmp_path, "sub/hw.yaml", BASE + "defaults: {mem_per_gpu: 10G, max_requeues: 7}\n")
    top = _write(tmp_path, "top.yaml", """\
        version: 1
        include: [sub/hw.yaml]
        classes: [{name: all, partition: batch}]
        defaults: {mem_per_gpu: 20G}
        """)
    pol = load_policy(top)
    assert pol.defaults.mem_per_gpu_mb == 20 * 1024 and pol.defaults.max_requeues == 7
    assert pol.node_types[0].topology == str(tmp_path / "sub" / "t.yaml")
    assert pol.includes == (os.path.realpath(tmp_path / "sub" / "hw.yaml"),)
    assert pol.partition_nodes("batch") == ("n1", "n2")


def test_warnings_shadow_never_and_dangling(tmp_path) -> None:
    path = _write(tmp_path, "w.yaml", (BASE.rstrip(" ") + """\
    classes:
      - {name: any, match: {min_gpus: 1}, partition: batch}
      - {name: later, match: {min_gpus: 2, max_gpus: 4}, partition: batch}
      - {name: never, match: {min_gpus: 9, max_gpus: 4}, partition: batch}
      - {name: huge, match: {min_gpus: 64}, partition: batch}
    """).replace("qos: [{name: normal, max_gpus_per_job: 8}]", "qos: [{name: normal, preempts: [spott]}]"))
    r = check_policy(path)
    assert r.ok
    text = "\n".join(r.warnings)
    assert "classes.later: shadowed by earlier class any" in text
    assert "classes.never: can never match: match.min_gpus 9 > match.max_gpus 4" in text
    assert "classes.huge: can never match: match.min_gpus 64 exceeds the 16 GPUs of partition batch" in text
    assert "qos.normal.preempts: found QOS 'spott' which is not defined" in text
    assert any(w.startswith(f"{path}:") and "classes.later" in w for w in r.warnings)


def test_cache_roundtrip_and_invalidation(tmp_path) -> None:
    path = _write(tmp_path, "p.yaml", BASE + "classes: [{name: all, partition: batch}]\n")
    cache = str(tmp_path / "cache")
    first = load_policy_cached(path, cache)
    assert os.listdir(cache) and load_policy_cached(path, cache) == first
    with open(path, "a") as fh:
        fh.write("description: changed\n")
    assert load_policy_cached(path, cache).description == "changed"
    for f in os.listdir(cache):  # a corrupt entry falls back to parsing
        (tmp_path / "cache" / f).write_bytes(b"garbage")
    assert load_policy_cached(path, cache).description == "changed"
    assert load_policy_cached(path, str(tmp_path / "p.yaml" / "not-a-dir")).name == "p"  # unwritable cache dir


def test_inventory_parsers_and_live_warnings() -> None:
    parts = parse_partitions("PartitionName=batch AllowGroups=ALL Default=YES\nPartitionName=mig Nodes=a100n1\n")
    assert parts == ("batch", "mig")
    assert parse_gres_types("gpu:h100:8(S:0-1)\ngpu:a100:2(S:0),gpu:a100_1g.10gb:2(S:1)\n(null)\n") == (
        "h100", "a100", "a100_1g.10gb")
    pol = load_policy(os.path.join(EX, "university.yaml"))
    w = live_warnings(pol, ("batch", "interactive", "spot"), ("normal",), ("h100",))
    assert "partitions.mig: not a partition of the live cluster (scontrol show partition)" in w
    assert "qos.debug: not a QOS of the live cluster (sacctmgr show qos)" in w
    assert "gpu_types.a100: no node of the live cluster has gres gpu:a100 (sinfo -o %G)" in w
    assert live_warnings(pol, ("batch", "interactive", "spot", "mig"), None, ("h100", "a100")) == []

