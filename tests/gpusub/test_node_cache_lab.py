# SPDX-License-Identifier: Apache-2.0
"""gpusub's cached node records against the real lab (slurm_gpu/adapters/node_cache.py): a live read
stores what ``scontrol show node -d -o`` says; a fresh entry is what the verdict reads; a stale entry
never refuses a job that the live records accept (the refusal is decided again on live records), and a
job that Slurm refuses after a verdict on cached records is decided again on live ones."""

from __future__ import annotations

import io
import json
import os

import pytest

from slurm_gpu.adapters import node_cache
from slurm_gpu.adapters.slurm import SbatchCli
from slurm_gpu.errors import Rejected
from slurm_gpu.policy.nodes import records_inventory
from slurm_gpu.slurm.records import read_node_records
from slurm_gpu.submit import gpusub

pytestmark = pytest.mark.slurm
READER = "SbatchCli:scontrol"
MARK = "cachedonly"  # a feature no lab node has


@pytest.fixture
def env(slurm_lab, tmp_path):
    (tmp_path / "xdg").mkdir()
    return slurm_lab.env() | {"PATH": os.environ["PATH"], "XDG_CACHE_HOME": str(tmp_path / "xdg"),
                              "HOME": str(tmp_path)}


def live_offers(env):
    return records_inventory(read_node_records(SbatchCli(env=env).nodes_text()).nodes).nodes


def script(tmp_path):
    path = tmp_path / "job.sh"
    path.write_text("#!/bin/bash\n#SBATCH --time=5\ntrue\n")
    return str(path)


def explain(env, args, tmp_path):
    out = io.StringIO()
    code = gpusub.run(["--explain", "--json", *args, script(tmp_path)], env, out, io.StringIO())
    return code, json.loads(out.getvalue())


def test_a_live_read_stores_the_records_scontrol_prints(env, tmp_path):
    code, doc = explain(env, ["--gres=gpu:h100:1"], tmp_path)
    assert code == 0 and doc["accepted"]
    assert node_cache.cached_offers(env, READER) == live_offers(env)


def test_a_fresh_entry_is_what_the_verdict_reads(env, tmp_path):
    planted = [n._replace(features=n.features | {MARK}) for n in live_offers(env)]
    assert node_cache.store_offers(env, READER, planted)
    code, doc = explain(env, [f"--constraint={MARK}", "--gres=gpu:h100:1"], tmp_path)
    assert code == 0 and doc["accepted"], doc  # what the cached records allow
    code, doc = explain(env | {"GPUSUB_NODES_TTL": "0"}, [f"--constraint={MARK}", "--gres=gpu:h100:1"], tmp_path)
    assert code == 1 and not doc["accepted"]  # the live records: no node has the feature


def test_a_stale_entry_never_refuses_what_the_live_records_accept(env, tmp_path):
    live = live_offers(env)
    without_gpus = [n._replace(gres=()) for n in live]
    assert node_cache.store_offers(env, READER, without_gpus)
    code, doc = explain(env, ["--gres=gpu:h100:1"], tmp_path)
    ref_code, ref = explain(env | {"GPUSUB_NODES_TTL": "0"}, ["--gres=gpu:h100:1"], tmp_path)
    assert (code, doc["accepted"]) == (ref_code, ref["accepted"]) == (0, True)
    assert node_cache.cached_offers(env, READER) == live  # the live read replaced the stale entry


def test_a_job_slurm_refuses_after_a_cached_verdict_is_decided_again_live(env, tmp_path):
    planted = [n._replace(features=n.features | {MARK}) for n in live_offers(env)]
    assert node_cache.store_offers(env, READER, planted)
    argv = ["--test-only", f"--constraint={MARK}", "--gres=gpu:h100:1", script(tmp_path)]
    with pytest.raises(Rejected, match=f"feature.*{MARK}"):  # the policy's own reason, from live records
        gpusub.run(argv, env, io.StringIO(), io.StringIO())
    with pytest.raises(Rejected, match=f"feature.*{MARK}"):
        gpusub.run(argv, env | {"GPUSUB_NODES_TTL": "0"}, io.StringIO(), io.StringIO())
    # and the accepted form still reaches Slurm's own verdict through the refreshed entry
    out = io.StringIO()
    assert gpusub.run(["--test-only", "--gres=gpu:h100:1", script(tmp_path)], env, out, io.StringIO()) == 0
    assert "to start at" in out.getvalue()
