# SPDX-License-Identifier: Apache-2.0
"""Topology JSON and descriptor validation: wrong shapes and values give one line naming the field;
no duplicate GPU index, at least one socket, integers that are integers."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurm_gpu.cli.main import cli
from slurm_gpu.errors import TopologyError
from slurm_gpu.topology import load_topology_file, topology_from_json
from slurm_gpu.topology.nvidia_smi import topology_from_nvidia_smi

EXAMPLES = Path(__file__).parents[2] / "examples" / "topology"
DATA = Path(__file__).parent / "data"
FULL = load_topology_file(EXAMPLES / "h100x8.yaml").to_json()


def mutated(change) -> dict:
    data = json.loads(json.dumps(copy.deepcopy(FULL)))
    change(data)
    return data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(sockets=0), "topology JSON: sockets: must be at least 1, got 0"),
        (lambda d: d.update(threads_per_core=0), "topology JSON: threads_per_core: must be at least 1, got 0"),
        (lambda d: d["gpus"][3].update(index=0), "topology JSON: gpus: GPU index 0 appears twice"),
        (lambda d: d["cpus"][5].update(os_id=4), "topology JSON: cpus: cpu 4 appears twice"),
        (lambda d: d["numa_nodes"][1].update(id=0), "topology JSON: numa_nodes: NUMA node 0 appears twice"),
        (lambda d: d.update(sockets=True), "topology JSON: sockets: expected a non-negative integer, got True"),
        (lambda d: d.update(sockets=2.0), "topology JSON: sockets: expected a non-negative integer, got 2.0"),
        (lambda d: d.update(sockets=3), "topology JSON: sockets is 3 but the cpus name 2 socket(s)"),
        (lambda d: d["cpus"][0].update(os_id="0"), "topology JSON: cpus[0].os_id: expected a non-negative integer"),
        (lambda d: d["gpus"][0].update(cpus="0-15"), "topology JSON: gpus[0].cpus: expected a list"),
        (lambda d: d["gpus"][0].update(name=["x"]), "topology JSON: gpus[0].name: expected a string, got ['x']"),
        (lambda d: d["gpus"][0].update(colour="red"), "topology JSON: gpus[0]: unknown key 'colour'"),
        (lambda d: d["gpus"][0].pop("index"), "topology JSON: gpus[0]: missing key 'index'"),
        (lambda d: d["gpus"][0].update(cpus=[40000]), "topology JSON: gpus index 0: names cpus that are not in cpus"),
        (lambda d: d["links"][0].update(kind="NV1234"), "topology JSON: links: unknown relation 'NV1234'"),
        (lambda d: d["links"][0].update(a="CPU0"), "topology JSON: links: devices must be GPU<n> or NIC<n>"),
        (lambda d: d.update(cpus={}), "topology JSON: cpus: expected a list"),
        (lambda d: d.pop("cpus"), "topology JSON: missing key 'cpus'"),
        (lambda d: d.update(colour=1), "topology JSON: unknown key 'colour'"),
    ],
)
def test_json_validation(change, message):
    with pytest.raises(TopologyError) as e:
        topology_from_json(mutated(change))
    assert str(e.value).startswith(message)
    assert "\n" not in str(e.value)


def test_json_round_trip_keeps_the_socket_assumption(tmp_path):
    topo = topology_from_nvidia_smi((DATA / "hgx-h200-8gpu.nvidia-smi-topo.txt").read_text())
    f = tmp_path / "n.json"
    f.write_text(json.dumps(topo.to_json()))
    again = load_topology_file(f)
    assert again == topo and again.socket_assumption == topo.socket_assumption
    assert again.socket_assumption.startswith("no lscpu given: 2 socket(s)")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nvidia_smi: x.txt\ngpu: {name: [1, 2]}\n", "gpu.name: expected a GPU name (text), got [1, 2]"),
        ("nvidia_smi: x.txt\ngpu: {memory_mib: -5}\n", "gpu.memory_mib: expected a positive integer (MiB), got -5"),
        ("nvidia_smi: x.txt\ngpu: {mig_capable: 'yes'}\n", "gpu.mig_capable: expected true or false, got 'yes'"),
        ("nvidia_smi: [a, b]\n", "nvidia_smi: expected a file name, got ['a', 'b']"),
        ("nvidia_smi: x.txt\nmemory_mb: true\n", "memory_mb: expected a positive integer (MB), got True"),
    ],
)
def test_descriptor_validation(tmp_path, text, message):
    d = tmp_path / "n.yaml"
    d.write_text(text)
    out = CliRunner().invoke(cli, ["topo", "show", "--from-file", str(d)])
    assert out.exit_code == 2 and out.stdout == ""
    assert out.stderr == f"Error: {d}: {message}\n"
