# SPDX-License-Identifier: Apache-2.0
"""The Python model of "options -> job_desc" (slurm_gpu.slurm.job_desc) against what Slurm really
handed job_submit.lua: the dumps in fixtures/<version>/cases.jsonl, recorded in the lab by
job_submit/record.lua (tests/job_submit/capture.py, capture_deb13.sh). Every recorded submission is
a test case; each field of MODEL_FIELDS must match the dump exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurm_gpu.slurm.job_desc import MODEL_FIELDS, NO_VAL, NO_VAL16, NO_VAL64, ModelGap, job_descs_for
from slurm_gpu.slurm.release import parse_sbatch_version
from slurm_gpu.slurm.sbatch.getopt import OptionError

FIXTURES = Path(__file__).parent / "fixtures"

# Cases the model does not cover, with the reason (kept visible as xfail, not hidden).
NOT_MODELLED: dict[str, str] = {}


def _rows() -> list[dict]:
    rows = []
    for path in sorted(FIXTURES.glob("*/cases.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows


ROWS = _rows()
SUBMITS = [r for r in ROWS if r["dumps"] and r["tool"] != "scontrol"]
REFUSED = [r for r in ROWS if not r["dumps"]]


def _id(row: dict) -> str:
    return f"{row['slurm_version']}:{row['id']}"


def test_fixtures_cover_both_releases() -> None:
    versions = {r["slurm_version"] for r in SUBMITS}
    assert {"22.05.8", "24.11.5"} <= versions
    for v in versions:
        assert sum(1 for r in SUBMITS if r["slurm_version"] == v) >= 100, v


@pytest.mark.parametrize("row", SUBMITS, ids=_id)
def test_model_reproduces_dump(row: dict) -> None:
    if row["id"] in NOT_MODELLED:
        pytest.xfail(NOT_MODELLED[row["id"]])
    version = parse_sbatch_version(row["slurm_version"])
    try:
        model = job_descs_for(row["argv"], version, row["script"])
    except ModelGap as exc:
        pytest.xfail(str(exc))
    dumps = [d["job_desc"] for d in row["dumps"] if d["hook"] == "submit"]
    assert len(model) == len(dumps), "one job_desc per (het) component"
    for k, (want, got) in enumerate(zip(dumps, model, strict=True)):
        assert set(MODEL_FIELDS) <= set(want), "a modelled field the recorder did not write"
        diff = {f: (want.get(f), got[f]) for f in MODEL_FIELDS if want.get(f) != got[f]}
        assert not diff, f"component {k}: field: (Slurm, model) {diff}"


@pytest.mark.parametrize("row", REFUSED, ids=_id)
def test_no_dump_means_refused(row: dict) -> None:
    """A command line that never reached the plugin failed (client or slurmctld refused it)."""
    assert row["rc"] != 0
    assert "error" in row["stderr"].lower() or "unrecognized" in row["stderr"].lower()


def test_sentinels_as_lua_sees_them() -> None:
    dump = next(d["job_desc"] for r in SUBMITS if r["id"] == "gpus-n" for d in r["dumps"])
    assert dump["num_tasks"] == NO_VAL and dump["cpus_per_task"] == NO_VAL16
    assert dump["pn_min_memory"] == NO_VAL64 and dump["min_mem_per_node"] is None
    assert dump["tres_per_node"] is None


def test_modify_dumps_carry_only_the_change() -> None:
    rows = [r for r in ROWS if r["tool"] == "scontrol" and r["dumps"]]
    assert rows
    for r in rows:
        (d,) = [d for d in r["dumps"] if d["hook"] == "modify"]
        assert isinstance(d["job_id"], int)
        jd = d["job_desc"]
        assert jd["script_set"] is False and jd["tres_per_job"] is None


def test_sbatch_refusals_agree_with_the_parser() -> None:
    """Options the client refuses on a release (e.g. --tres-bind on 22.05) are refused by the parser."""
    for r in REFUSED:
        if "unrecognized option" in r["stderr"]:
            with pytest.raises(OptionError):
                job_descs_for(r["argv"], parse_sbatch_version(r["slurm_version"]), r["script"])
