# SPDX-License-Identifier: Apache-2.0
"""Trace readers: the Slurm-native CSV, sacct -P, SWF; the time-limit rule; one-line errors."""

from __future__ import annotations

import pytest

from slurm_gpu.sim.traces import (
    MAX_LINE,
    TraceError,
    derive_time_limit,
    detect_format,
    format_time,
    read_csv,
    read_sacct,
    read_swf,
    read_trace,
)

HELIOS = """job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue
j1,u1,vcA,8,64,1,COMPLETED,2020-04-01 00:00:10,2020-04-01 00:01:10,2020-04-01 01:01:10,3600,60
j2,u2,vcB,16,128,2,FAILED,2020-04-01 00:02:00,2020-04-01 00:02:00,2020-04-01 00:12:00,600,0
j3,u2,vcB,1,8,1,CANCELLED,2020-04-01 00:03:00,,,0,0
"""


def test_helios_columns() -> None:
    t = read_csv(HELIOS.splitlines(), "h.csv")
    assert t.skipped == 1  # j3 never started
    assert [j.job_id for j in t.jobs] == ["j1", "j2"]
    j1, j2 = t.jobs
    assert j1.submit == 1585699210  # 2020-04-01T00:00:10Z
    assert (j1.duration, j1.gpus, j1.nodes, j1.cpus, j1.account, j1.user) == (3600, 8, 1, 64, "vcA", "u1")
    assert (j2.gpus, j2.nodes, j2.state, j2.start, j2.line) == (16, 2, "FAILED", 1585699320, 3)
    assert t.time_format == "%Y-%m-%d %H:%M:%S"
    assert format_time(j1.submit, t.time_format) == "2020-04-01 00:00:10"


def test_epoch_times_optional_columns_and_duration_from_start_end() -> None:
    text = ("job_id,submit_time,start_time,end_time,gpu_num,time_limit,gpu_type,partition,qos,account,gpu_fraction\n"
            "7,100,130,190,2,1:00:00,h100,batch,high,acct,\n"
            "8,200,200,260,1,30,a100,mig,,,0.25\n")
    t = read_csv(text.splitlines(), "e.csv")
    a, b = t.jobs
    assert (a.submit, a.duration, a.time_limit_s, a.gpu_type, a.partition, a.qos, a.account) == (
        100, 60, 3600, "h100", "batch", "high", "acct")
    assert (b.gpu_fraction, b.gpus, b.time_limit_s, b.qos) == (0.25, 1, 1800, None)
    assert t.time_format == "epoch" and format_time(100, "epoch") == "100"


@pytest.mark.parametrize("text,where", [
    ("job_id,duration\n1,5\n", "e.csv:1:1: missing column(s) submit_time"),
    ("job_id,submit_time\n1,5\n", "e.csv:1:1: missing column(s) duration (or start_time and end_time)"),
    ("job_id,submit_time,duration\n1,yesterday,5\n", "e.csv:2:2: submit_time: bad time 'yesterday'"),
    ("job_id,submit_time,duration\n1,5,5\n2,6,-3\n", "e.csv:3:3: duration: bad count '-3'"),
    ("job_id,submit_time,duration\n1,5\n", "e.csv:2:1: 2 fields, the header has 3"),
    ("job_id,submit_time,duration,time_limit\n1,5,5,soon\n", "e.csv:2:4: time_limit: bad time 'soon'"),
    ("job_id,submit_time,duration,gpu_fraction\n1,5,5,2\n", "e.csv:2:4: gpu_fraction: bad fraction '2'"),
    ("", "e.csv:1:1: empty trace"),
    ("job_id,submit_time,duration\n", "e.csv:1:1: no job in the trace"),
])
def test_bad_csv_is_one_line_naming_file_line_column(text: str, where: str) -> None:
    with pytest.raises(TraceError) as info:
        read_csv(text.splitlines(), "e.csv")
    assert str(info.value).startswith(where) and "\n" not in str(info.value)


def test_long_line_is_refused_before_it_is_parsed() -> None:
    lines = ["job_id,submit_time,duration", "1,5," + "9" * (MAX_LINE + 1)]
    with pytest.raises(TraceError, match=r"^e.csv:2:1: line longer than"):
        read_csv(lines, "e.csv")


SACCT = """JobID|User|Account|Partition|QOS|State|Submit|Start|End|Elapsed|Timelimit|NNodes|AllocTRES
101|alice|lab|batch|normal|COMPLETED|2024-01-01T10:00:00|2024-01-01T10:00:05|2024-01-01T11:00:05|01:00:00|02:00:00|2|billing=16,cpu=16,gres/gpu:h100=8,gres/gpu=8,node=2
101.batch||lab|||COMPLETED|2024-01-01T10:00:05|2024-01-01T10:00:05|2024-01-01T11:00:05|01:00:00||1|cpu=8
102|bob|lab|spot|spot|PENDING|2024-01-01T10:05:00|Unknown|Unknown|00:00:00|1-00:00:00|1|
103|bob|lab|spot|spot|TIMEOUT|2024-01-01T10:06:00|2024-01-01T10:06:00|2024-01-02T10:06:00|1-00:00:00|UNLIMITED|1|gres/gpu:a100=2
"""


def test_sacct_parsable() -> None:
    t = read_sacct(SACCT.splitlines(), "s.txt")
    assert [j.job_id for j in t.jobs] == ["101", "103"] and t.skipped == 1
    a, c = t.jobs
    assert (a.duration, a.time_limit_s, a.nodes, a.gpus, a.gpu_type, a.partition, a.qos, a.user) == (
        3600, 7200, 2, 8, "h100", "batch", "normal", "alice")
    assert (c.duration, c.time_limit_s, c.gpus, c.gpu_type, c.state) == (86400, None, 2, "a100", "TIMEOUT")
    assert t.time_format == "%Y-%m-%dT%H:%M:%S"


def test_sacct_bad_elapsed_names_the_column() -> None:
    text = "JobID|Submit|Start|Elapsed\n5|2024-01-01T10:00:00|2024-01-01T10:00:00|forever\n"
    with pytest.raises(TraceError, match=r"^s.txt:2:4: Elapsed: bad duration 'forever'"):
        read_sacct(text.splitlines(), "s.txt")


SWF = """; Version: 2.2
; Computer: test
1 0 10 100 4 -1 -1 4 3600 -1 1 7 3 -1 1 -1 -1 -1
2 5 -1 -1 2 -1 -1 2 600 -1 5 8 3 -1 1 -1 -1 -1
3 9 0 50 -1 -1 -1 2 -1 -1 1 8 3 -1 1 -1 -1 -1
"""


def test_swf() -> None:
    t = read_swf(SWF.splitlines(), "w.swf")
    assert t.skipped == 1
    a, b = t.jobs
    assert (a.job_id, a.submit, a.duration, a.gpus, a.time_limit_s, a.start, a.user, a.account) == (
        "1", 0, 100, 4, 3600, 10, "7", "3")
    assert (b.gpus, b.time_limit_s) == (2, None)
    with pytest.raises(TraceError, match=r"^w.swf:1:1: 3 fields, SWF has 18"):
        read_swf(["1 2 3"], "w.swf")


@pytest.mark.parametrize("first,fmt", [("JobID|Submit", "sacct"), ("; SWF", "swf"), ("1 0 10 100", "swf"),
                                       ("job_id,submit_time", "csv")])
def test_detect_format(first: str, fmt: str) -> None:
    assert detect_format(first) == fmt


def test_read_trace_detects_and_refuses_unknown_formats() -> None:
    assert read_trace(SACCT.splitlines(), "s").jobs[0].job_id == "101"
    with pytest.raises(TraceError, match="unknown trace format 'json'"):
        read_trace(["x"], "t", "json")


@pytest.mark.parametrize("duration,limit", [(0, 900), (1, 900), (900, 900), (901, 1800), (3600, 3600),
                                            (3601, 7200), (20000, 28800), (86400, 115200)])
def test_time_limit_rule(duration: int, limit: int) -> None:
    assert derive_time_limit(duration) == limit


def test_csv_module_errors_are_one_line() -> None:
    lines = ["job_id,submit_time,duration", '1,5,"' + "x" * 1000] + ["y" * 1000] * 200
    with pytest.raises(TraceError, match=r"^e.csv:\d+:1: field larger than field limit"):
        read_csv(lines, "e.csv")


def test_swf_overflowing_number() -> None:
    with pytest.raises(TraceError, match=r"^w.swf:1:2: submit: bad number 'inf'"):
        read_swf(["1 inf 0 1 1 -1 -1 1 60 -1 1 1 1 -1 1 -1 -1 -1"], "w.swf")
