# SPDX-License-Identifier: Apache-2.0
"""job_submit/record.lua itself, run by Lua 5.1 (lupa's lua51, the Lua slurmctld links): it writes
one valid JSON line per call beside the lab's log dir, keeps the sentinels as numbers, survives a
field getter that raises, and always returns slurm.SUCCESS. (What Slurm hands it is in the fixtures,
recorded by the real slurmctld; this checks only the recorder's own code.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

lua51 = pytest.importorskip("lupa.lua51")

RECORD = Path(__file__).resolve().parents[2] / "job_submit" / "record.lua"


def _load(tmp_path: Path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "log").mkdir()
    shutil.copy(RECORD, tmp_path / "etc" / "job_submit.lua")
    lua = lua51.LuaRuntime(unpack_returned_tuples=True)
    lua.execute("slurm = {SUCCESS = 0, ERROR = -1}")
    rc = lua.eval(f"dofile({json.dumps(str(tmp_path / 'etc' / 'job_submit.lua'))})")
    assert rc == 0
    return lua


def test_records_one_json_line(tmp_path: Path) -> None:
    lua = _load(tmp_path)
    desc = lua.eval("""{tres_per_job = "gres/gpu:2", num_tasks = 4294967294, cpus_per_task = 65534,
        pn_min_memory = 18446744073709551614, time_limit = 30, name = 'a"b\\n', script = "#!/bin/sh",
        argv = {"x", "y"}}""")
    parts = lua.eval('{{name = "batch"}, {name = "spot"}}')
    assert lua.globals().slurm_job_submit(desc, parts, 1001) == 0
    (line,) = (tmp_path / "log" / "job_desc.jsonl").read_text().splitlines()
    rec = json.loads(line)
    jd = rec["job_desc"]
    assert rec["hook"] == "submit" and rec["submit_uid"] == 1001 and rec["part_list"] == ["batch", "spot"]
    assert jd["tres_per_job"] == "gres/gpu:2" and jd["tres_per_node"] is None
    assert jd["num_tasks"] == 4294967294 and jd["cpus_per_task"] == 65534 and jd["time_limit"] == 30
    assert jd["pn_min_memory"] == float(0xFFFFFFFFFFFFFFFE)
    assert jd["name"] == 'a"b\n' and jd["script_set"] is True and jd["argv"] == ["x", "y"]


def test_a_raising_getter_is_recorded_as_nil_and_never_raises(tmp_path: Path) -> None:
    lua = _load(tmp_path)
    desc = lua.eval("""setmetatable({}, {__index = function(t, k)
        if k == "gres" then error("boom") end
        if k == "qos" then return "debug" end
        return nil end})""")
    assert lua.globals().slurm_job_submit(desc, None, 0) == 0
    rec = json.loads((tmp_path / "log" / "job_desc.jsonl").read_text())
    assert rec["job_desc"]["gres"] is None and rec["job_desc"]["qos"] == "debug"
    job = lua.eval("{job_id = 42}")
    assert lua.globals().slurm_job_modify(lua.eval("{time_limit = 5}"), job, None, 0) == 0
    last = json.loads((tmp_path / "log" / "job_desc.jsonl").read_text().splitlines()[-1])
    assert last["hook"] == "modify" and last["job_id"] == 42 and last["job_desc"]["time_limit"] == 5


def test_nowhere_to_write_still_succeeds(tmp_path: Path) -> None:
    lua = _load(tmp_path)
    shutil.rmtree(tmp_path / "log")
    shutil.rmtree(tmp_path / "etc")  # both candidate files now lie in missing directories
    assert lua.globals().slurm_job_submit(lua.eval("{}"), None, 0) == 0
    assert list(tmp_path.iterdir()) == []
