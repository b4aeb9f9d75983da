# SPDX-License-Identifier: Apache-2.0
"""gpusub's cache of the cluster's node records (slurm_gpu/adapters/node_cache.py): the offers read back
as stored while fresh; a miss once stale, in the future, for another slurm.conf or reader, with TTL 0, or
when the entry is not exactly the expected shape or not the user's own private file. The records are the
lab's own ``scontrol show node -d -o`` recordings (22.05 and 24.11)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from slurm_gpu.adapters import node_cache
from slurm_gpu.errors import UsageError
from slurm_gpu.policy.nodes import records_inventory
from slurm_gpu.slurm.records import read_node_records

DATA = Path(__file__).resolve().parents[1] / "cluster" / "data"
READER = "SbatchCli:scontrol"


def offers(release: str):
    return records_inventory(read_node_records((DATA / f"lab-{release}" / "nodes.txt").read_text()).nodes).nodes


@pytest.fixture
def env(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=t\n")
    return {"SLURM_CONF": str(conf), "XDG_CACHE_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path)}


@pytest.mark.parametrize("release", ["22.05", "24.11"])
def test_fresh_entry_reads_back_the_offers(env, release):
    nodes = offers(release)
    assert nodes and any(n.gres for n in nodes)
    os.makedirs(env["XDG_CACHE_HOME"])
    assert node_cache.store_offers(env, READER, nodes, now=1000.0)
    assert node_cache.cached_offers(env, READER, now=1000.0 + node_cache.TTL_S - 1) == nodes
    cache_dir = Path(env["XDG_CACHE_HOME"]) / "slurm-gpu"
    assert oct(cache_dir.stat().st_mode & 0o777) == "0o700"
    (entry,) = cache_dir.glob("nodes-*.json")
    assert oct(entry.stat().st_mode & 0o777) == "0o600"


def test_stale_future_other_conf_other_reader_and_ttl_zero_miss(env, tmp_path):
    nodes = offers("22.05")
    os.makedirs(env["XDG_CACHE_HOME"])
    assert node_cache.store_offers(env, READER, nodes, now=1000.0)
    assert node_cache.cached_offers(env, READER, now=1000.0 + node_cache.TTL_S + 1) is None
    assert node_cache.cached_offers(env, READER, now=999.0) is None  # the clock went back
    assert node_cache.cached_offers(env, "RecordedCluster:", now=1000.0) is None
    other = tmp_path / "other.conf"
    other.write_text("ClusterName=u\n")
    assert node_cache.cached_offers(env | {"SLURM_CONF": str(other)}, READER, now=1000.0) is None
    assert node_cache.cached_offers(env | {"GPUSUB_NODES_TTL": "0"}, READER, now=1000.0) is None
    assert node_cache.cached_offers(env | {"GPUSUB_NODES_TTL": "120"}, READER, now=1100.0) == nodes
    assert not node_cache.store_offers(env | {"GPUSUB_NODES_TTL": "0"}, READER, nodes)
    # an edited gres.conf or slurm.conf (an admin's reconfigure) is another key
    (Path(env["SLURM_CONF"]).parent / "gres.conf").write_text("Name=gpu\n")
    assert node_cache.cached_offers(env, READER, now=1000.0) is None
    assert node_cache.store_offers(env, READER, nodes, now=1000.0)
    assert node_cache.cached_offers(env, READER, now=1000.0) == nodes
    Path(env["SLURM_CONF"]).write_text("ClusterName=t\nNodeName=x\n")
    assert node_cache.cached_offers(env, READER, now=1000.0) is None


@pytest.mark.parametrize("raw", ["1", "0", "59.5", ""])
def test_ttl_values(raw):
    assert node_cache.ttl_of({"GPUSUB_NODES_TTL": raw}) == (float(raw) if raw else node_cache.TTL_S)


@pytest.mark.parametrize("raw", ["-1", "x", "nan", "1e9", "١٠"])
def test_bad_ttl_is_one_usage_line(raw):
    with pytest.raises(UsageError, match="GPUSUB_NODES_TTL="):
        node_cache.ttl_of({"GPUSUB_NODES_TTL": raw})


def _entry(env) -> Path:
    (entry,) = (Path(env["XDG_CACHE_HOME"]) / "slurm-gpu").glob("nodes-*.json")
    return entry


@pytest.mark.parametrize("data", [
    {"written": 1000.0, "nodes": []},
    {"written": "1000", "nodes": [["n1", [], [], [], None, None]]},
    {"written": 1000.0, "nodes": [["n1", ["p"], ["f"], [["gpu", "h100", "8"]], None, None]]},
    {"written": 1000.0, "nodes": [["n1", ["p"], ["f"], [["gpu", "h100", 8]], -4, None]]},
    {"written": 1000.0, "nodes": [["n1", "p", ["f"], [], None, None]]},
    {"written": 1000.0, "nodes": [{"name": "n1"}]},
    {"nodes": [["n1", ["p"], [], [], None, None]]},
])
def test_an_entry_of_another_shape_is_a_miss(env, data):
    os.makedirs(env["XDG_CACHE_HOME"])
    assert node_cache.store_offers(env, READER, offers("22.05"), now=1000.0)
    entry = _entry(env)
    line = entry.read_bytes().split(b"\n", 1)[0]
    entry.write_bytes(line + b"\n" + json.dumps(data).encode())
    assert node_cache.cached_offers(env, READER, now=1000.0) is None


def test_an_entry_that_is_not_the_users_own_private_file_is_a_miss(env, tmp_path):
    os.makedirs(env["XDG_CACHE_HOME"])
    nodes = offers("22.05")
    assert node_cache.store_offers(env, READER, nodes, now=1000.0)
    entry = _entry(env)
    entry.chmod(0o644)  # readable by others: not the cache's own entry
    assert node_cache.cached_offers(env, READER, now=1000.0) is None
    entry.chmod(0o600)
    target = tmp_path / "planted.json"
    target.write_bytes(entry.read_bytes())
    target.chmod(0o600)
    entry.unlink()
    entry.symlink_to(target)  # a symlink is never followed
    assert node_cache.cached_offers(env, READER, now=1000.0) is None


def test_the_offer_codec_round_trips():
    for node in offers("24.11"):
        assert node_cache.offer_from_json(json.loads(json.dumps(node_cache.offer_to_json(node)))) == node
