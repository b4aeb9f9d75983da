# SPDX-License-Identifier: Apache-2.0
"""The per-version spelling table, against facts measured in the lab (notes/slurm-lab.md)."""

from __future__ import annotations

import pytest

from slurm_gpu.errors import SlurmGpuError
from slurm_gpu.slurm.release import (
    DEVICE_ENV,
    JSON_DIALECTS,
    JSON_SHIPPED,
    KNOWN_VERSIONS,
    PREEMPT_SIGNAL_LINE,
    PROLOG_TIMEOUT_KEYS,
    SUPPORTED,
    parse_sbatch_version,
    since,
    spelling_for,
)


@pytest.mark.parametrize("text, version", [
    ("slurm 22.05.8", (22, 5, 8)),            # Debian 12 `sbatch --version`
    ("slurm-wlm 22.05.8\n", (22, 5, 8)),
    ("slurm-wlm 24.11.5", (24, 11, 5)),       # Debian 13
    ("slurm 23.11.0-0rc1", (23, 11, 0)),
    ("slurm 25.11", (25, 11, 0)),
])
def test_parse_sbatch_version(text, version):
    assert parse_sbatch_version(text) == version


@pytest.mark.parametrize("text", ["", "sbatch: fatal: Could not establish a configuration source", "slurm x.y"])
def test_parse_sbatch_version_refuses_garbage_with_the_accepted_forms(text):
    with pytest.raises(SlurmGpuError, match="slurm 22.05.8"):
        parse_sbatch_version(text)


def test_gres_prefix_changes_at_23_11():
    # job records: CpusPerTres=gres:gpu:4 (22.05.8) vs gres/gpu:4 (24.11.5); slurm_opt.c switch at 23.11.0
    assert spelling_for((22, 5, 8)).gres_prefix == "gres:"
    assert spelling_for((23, 2, 7)).gres_prefix == "gres:"
    assert spelling_for((23, 11, 0)).gres_prefix == "gres/"
    assert spelling_for((24, 11, 5)).gres("gpu:h100:2") == "gres/gpu:h100:2"


def test_tres_bind_only_from_23_11_and_with_the_gres_prefix():
    with pytest.raises(SlurmGpuError, match="--gpu-bind=closest"):
        spelling_for((22, 5, 8)).tres_bind("closest")  # 22.05: "unrecognized option '--tres-bind...'"
    s = spelling_for((24, 11, 5))
    assert s.tres_bind("closest") == "--tres-bind=gres/gpu:closest"  # "gpu:closest" is refused by 24.11
    assert s.tres_bind("map_gpu:1,0") == "--tres-bind=gres/gpu:map:1,0"


@pytest.mark.parametrize("version", KNOWN_VERSIONS)
def test_gpu_bind_spelling_is_accepted_by_every_version(version):
    # --gpu-bind works on 22.05 and 24.11 (24.11: "equivalent to --tres-bind=gres/gpu:...")
    assert spelling_for(version).gpu_bind("single:1") == "--gpu-bind=single:1"


def test_allow_task_sharing_from_23_11_4_and_srun_only():
    assert not spelling_for((23, 11, 3)).has_allow_task_sharing
    assert spelling_for((23, 11, 4)).has_allow_task_sharing
    assert spelling_for((24, 11, 5)).allow_task_sharing_srun_only  # "sbatch: error: ... only used with srun."
    assert not spelling_for((22, 5, 8)).has_allow_task_sharing  # "Invalid --gres-flags specification"


def test_json_shapes():
    old, new = spelling_for((22, 5, 8)), spelling_for((24, 11, 5))
    assert not old.has_scontrol_json and new.has_scontrol_json  # 22.05: "unrecognized option '--json'"
    assert old.sinfo_json_key == "nodes" and new.sinfo_json_key == "sinfo"
    assert not old.job_state_is_list and new.job_state_is_list  # ["RUNNING"] in v0.0.42
    assert old.tres_per_task_sep == ":" and new.tres_per_task_sep == "="  # gres/gpu=1 in 24.11
    assert not old.typed_gpus_per_task_ok and new.typed_gpus_per_task_ok


def test_two_part_versions_and_labels():
    assert spelling_for((24, 11)).version == (24, 11, 0)
    assert spelling_for((22, 5, 8)).label == "22.05.8"


@pytest.mark.parametrize("version", SUPPORTED)
def test_every_supported_release_pins_a_json_it_ships_and_the_reader_knows(version):
    """22.05: bare --json; 24.11: v0.0.42 (measured); 26.05: v0.0.45, its default, v0.0.42 deprecated (measured)."""
    spelling = spelling_for(version)
    if spelling.squeue_json == "--json":
        assert version < (23, 2, 0)
        return
    pinned = "data_parser/" + spelling.squeue_json.split("=", 1)[1]
    assert pinned in since(JSON_SHIPPED, version) and pinned in JSON_DIALECTS


def test_the_2605_row():
    old, mid, new = spelling_for((22, 5, 8)), spelling_for((24, 11, 5)), spelling_for((26, 5, 5))
    assert not old.gpus_per_node_excludes_gres_gpu and not mid.gpus_per_node_excludes_gres_gpu
    assert new.gpus_per_node_excludes_gres_gpu and new.squeue_json == "--json=v0.0.45"
    assert old.logs_backfill_starts and mid.logs_backfill_starts and not new.logs_backfill_starts
    assert [since(PREEMPT_SIGNAL_LINE, v).split("=")[0] for v in SUPPORTED] == [
        "SlurmctldParameters", "PreemptParameters", "PreemptParameters"]
    assert since(PROLOG_TIMEOUT_KEYS, (24, 11)) == ("PrologEpilogTimeout",)
    assert "PrologTimeout" in since(PROLOG_TIMEOUT_KEYS, (26, 5)) and "EpilogTimeout" in since(PROLOG_TIMEOUT_KEYS,
                                                                                                (25, 5))
    assert since(DEVICE_ENV, (24, 11, 5))["prolog"] == "index" and since(DEVICE_ENV, (26, 5, 5))["prolog"] == "uuid"
