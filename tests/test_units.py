# SPDX-License-Identifier: Apache-2.0
"""slurm_gpu.units: examples from sbatch(1)/Slurm, round trips and totality (hypothesis)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_gpu import units as u

# ---- time ---------------------------------------------------------------------------------------

LIMITS = [  # sbatch --time forms (sbatch.1) -> minutes; seconds round up; zero and the words = no limit
    ("30", 30), ("5:30", 6), ("2:00:00", 120), ("1-0", 1440), ("1-02", 1560), ("1-02:30", 1590),
    ("2-00:00:01", 2881), ("0", None), ("00:00:00", None), ("UNLIMITED", None), ("infinite", None), ("-1", None),
    (" 45 ", 45), ("0:01", 1), ("100:00:00", 6000),
]


@pytest.mark.parametrize("text,minutes", LIMITS, ids=[t for t, _ in LIMITS])
def test_time_limits(text: str, minutes: int | None) -> None:
    assert u.parse_time_minutes(text) == minutes


@pytest.mark.parametrize("text,seconds", [("90s", 90), ("30m", 1800), ("4h", 14400), ("2d", 172800), ("0", 0),
                                          ("2", 120), ("1:30", 90), ("1-0:0:1", 86401)])
def test_durations(text: str, seconds: int) -> None:
    assert u.parse_time_seconds(text) == seconds


@pytest.mark.parametrize("bad", ["", "3w", "1:2:3:4", "25:99:00", "1-24", "abc", "1:60", "4h", "1e3", "-5",
                                 "9" * 11, "1" * 100, "99999999999-0", "4294967295"], ids=repr)
def test_bad_time_limits(bad: str) -> None:
    with pytest.raises(u.UnitError, match=r"^bad time .*; accepted: ") as info:
        u.parse_time_minutes(bad)
    assert "\n" not in str(info.value) and len(str(info.value)) < 200


def test_format_time() -> None:
    assert u.format_time_minutes(90) == "01:30:00" and u.format_time_minutes(2880) == "2-00:00:00"
    assert u.format_time_minutes(None) == "UNLIMITED"
    assert u.parse_time_minutes("UNLIMITED") is None  # not 2982616-04:15:00
    with pytest.raises(u.UnitError):
        u.format_time_minutes(-1)


@given(st.integers(1, u.MAX_TIME_MINUTES) | st.none())
def test_time_round_trip(minutes: int | None) -> None:
    assert u.parse_time_minutes(u.format_time_minutes(minutes)) == minutes


# ---- memory -------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,mb", [("4000", 4000), ("16G", 16384), ("16g", 16384), ("16GB", 16384),
                                     ("512M", 512), ("1T", 1048576), ("1536K", 2), ("1K", 1), ("0", 0)])
def test_mem(text: str, mb: int) -> None:
    assert u.parse_mem_mb(text) == mb


@pytest.mark.parametrize("bad", ["", "16B", "G", "1.5G", "16 GB x", "-1G", "1" * 17, "9999999999999999T", "16X"],
                         ids=repr)
def test_bad_mem(bad: str) -> None:
    with pytest.raises(u.UnitError, match="^bad memory size"):
        u.parse_mem_mb(bad)


def test_format_mem() -> None:
    assert [u.format_mem_mb(m) for m in (16384, 1500, 1048576, 0)] == ["16G", "1500M", "1T", "0M"]


@given(st.integers(0, u.MAX_MEM_MB))
def test_mem_round_trip(mb: int) -> None:
    assert u.parse_mem_mb(u.format_mem_mb(mb)) == mb


# ---- parameter counts ---------------------------------------------------------------------------

@pytest.mark.parametrize("text,n", [("7B", 7e9), ("70b", 70e9), ("350M", 3.5e8), ("1.5e9", 1.5e9), ("70M", 7e7),
                                    ("125000000", 1.25e8), ("1.3e9", 1.3e9), ("2T", 2e12), ("1.5K", 1500.0),
                                    (7e9, 7e9), (12, 12.0)])
def test_params(text: str, n: float) -> None:
    assert u.parse_param_count(text) == n


@pytest.mark.parametrize("bad", ["7G", "lots", "", "0", "-7B", "1e400", "1e-400", "inf", "nan", "1e16",
                                 float("nan"), float("inf"), 0, -1, 10 ** 400, True], ids=repr)
def test_bad_params(bad: object) -> None:
    with pytest.raises(u.UnitError, match="^bad parameter count") as info:
        u.parse_param_count(bad)  # type: ignore[arg-type]
    assert "infB" not in str(info.value) and "\n" not in str(info.value)


def test_params_messages() -> None:
    with pytest.raises(u.UnitError, match="write B for billions"):
        u.parse_param_count("7G")
    with pytest.raises(u.UnitError, match=r"'1e400': must be above 0 and at most 1e\+15"):
        u.parse_param_count("1e400")


def test_format_params() -> None:
    assert [u.format_param_count(n) for n in (7e9, 1.5e9, 3.5e8, 70e9, 2e12, 1500, 12)] == [
        "7B", "1.5B", "350M", "70B", "2T", "1.5K", "12"]


@given(st.floats(min_value=1e-300, max_value=u.MAX_PARAMS))
def test_params_round_trip(n: float) -> None:
    assert u.parse_param_count(u.format_param_count(n)) == n


# ---- MIG profiles -------------------------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("1g.10gb", u.MigProfile(1, 10)), ("a100_1g.10gb", u.MigProfile(1, 10, False, "a100")),
    ("1g.10gb+me", u.MigProfile(1, 10, True)), ("7g.80gb", u.MigProfile(7, 80)), ("3g.40gb", u.MigProfile(3, 40)),
    ("h100_3g.40gb+me", u.MigProfile(3, 40, True, "h100")),
])
def test_mig(text: str, expected: u.MigProfile) -> None:
    assert u.parse_mig_profile(text) == expected
    assert u.format_mig_profile(expected) == text


@pytest.mark.parametrize("bad", ["8g.80gb", "0g.5gb", "1g.10", "1g.10gb+", "_1g.10gb", "1g.99999gb", "1c.1g.10gb", ""],
                         ids=repr)
def test_bad_mig(bad: str) -> None:
    with pytest.raises(u.UnitError, match="^bad MIG profile"):
        u.parse_mig_profile(bad)


mig_profiles = st.builds(u.MigProfile, st.integers(1, 7), st.integers(0, 9999), st.booleans(),
                         st.none() | st.from_regex(r"\A[a-z][a-z0-9]{0,8}\Z"))


@given(mig_profiles)
def test_mig_round_trip(p: u.MigProfile) -> None:
    assert u.parse_mig_profile(u.format_mig_profile(p)) == p


# ---- totality: any text gives a value or a one-line UnitError -----------------------------------

PARSERS = [u.parse_time_minutes, u.parse_time_seconds, u.parse_mem_mb, u.parse_param_count, u.parse_mig_profile]
texts = (st.text(max_size=40) | st.from_regex(r"\A[0-9a-zA-Z:.+_ -]{0,30}\Z")
         | st.text(alphabet="0123456789", min_size=50, max_size=5000))


@settings(max_examples=300, deadline=None, database=None)
@given(st.sampled_from(PARSERS), texts)
def test_parsers_are_total(parse, text: str) -> None:
    try:
        value = parse(text)
    except u.UnitError as exc:
        msg = str(exc)
        assert msg.startswith("bad ") and "\n" not in msg and len(msg) < 400, msg
        return
    if isinstance(value, float):
        assert math.isfinite(value) and value > 0
    elif isinstance(value, int):
        assert value >= 0
