# SPDX-License-Identifier: Apache-2.0
"""Young's and Daly's intervals against hand-computed cases, their properties (hypothesis), and
``slurm-gpu ckpt advise``."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_gpu.checkpoint.advise import (
    AdviceError,
    daly,
    format_seconds,
    lost_work,
    overhead,
    parse_mtti,
    parse_seconds,
    young,
)
from slurm_gpu.cli.main import cli

# (C, M, Young, Daly), every number worked out by hand:
HAND = [
    # C=60 s, M=6 h=21600 s. Young = sqrt(2*60*21600) = sqrt(2592000) = 1609.96894
    # Daly: sqrt(C/2M) = sqrt(60/43200) = 0.0372678, /3 = 0.0124226; C/18M = 60/388800 = 0.0001543
    #       1609.96894 * 1.0125769 - 60 = 1630.21740 - 60 = 1570.21740
    (60, 21600, 1609.96894, 1570.21740),
    # C=2, M=100. Young = sqrt(400) = 20. Daly: sqrt(2/200) = 0.1, /3 = 0.0333333; 2/1800 = 0.0011111
    #       20 * 1.0344444 - 2 = 20.688889 - 2 = 18.688889
    (2, 100, 20.0, 18.688889),
    # C=50, M=100. Young = sqrt(10000) = 100. Daly: sqrt(50/200) = 0.5, /3 = 0.1666667; 50/1800 = 0.0277778
    #       100 * 1.1944444 - 50 = 69.444444
    (50, 100, 100.0, 69.444444),
    # C=200, M=100: C >= 2M, so Daly = M = 100. Young = sqrt(40000) = 200
    (200, 100, 200.0, 100.0),
    # C=300, M=100: Daly = M = 100. Young = sqrt(60000) = 244.948974
    (300, 100, 244.948974, 100.0),
    # C=1, M=2 days=172800. Young = sqrt(345600) = 587.877538
    # Daly: sqrt(1/345600) = 0.00170103, /3 = 0.00056701; 1/3110400 = 0.00000032
    #       587.877538 * 1.00056733 - 1 = 588.211058 - 1 = 587.211058
    (1, 172800, 587.877538, 587.211058),
]


@pytest.mark.parametrize("c,m,y,d", HAND)
def test_hand_computed_intervals(c: float, m: float, y: float, d: float) -> None:
    assert young(c, m) == pytest.approx(y, rel=1e-6)
    assert daly(c, m) == pytest.approx(d, rel=1e-6)


def test_hand_computed_overhead_and_lost_work() -> None:
    # C=2, M=100, tau=20: (100/20) * (e^0.22 - 1) - 1 = 5 * 0.24607673 - 1 = 0.23038365
    assert overhead(20, 2, 100) == pytest.approx(0.23038365, rel=1e-6)
    # with R=10: 1.23038365 * e^0.1 - 1 = 1.23038365 * 1.10517092 - 1 = 0.35978426
    assert overhead(20, 2, 100, 10) == pytest.approx(0.35978426, rel=1e-6)
    # lost: L = 22, 100 - 22 / (e^0.22 - 1) = 100 - 22 / 0.24607673 = 100 - 89.40299 = 10.59701 (~ L/2 = 11)
    assert lost_work(20, 2, 100) == pytest.approx(10.59701, rel=1e-5)
    # tiny L/M (the series): L = 2e-3 s, M = 1e9 s -> L/2 = 1e-3
    assert lost_work(1e-3, 1e-3, 1e9) == pytest.approx(1e-3, rel=1e-9)


@pytest.mark.parametrize("call", [lambda: young(0, 10), lambda: young(1, -1), lambda: daly(math.nan, 1),
                                  lambda: daly(1, math.inf), lambda: overhead(1, 1, 1, -1), lambda: young(True, 1),
                                  lambda: lost_work(1, 1e13, 1)])
def test_out_of_range_is_an_advice_error(call) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(AdviceError):
        call()


def test_overflow_is_infinite_not_an_error() -> None:
    assert overhead(1e6, 1e6, 1) == math.inf
    assert lost_work(1e6, 1e6, 1) == 1.0  # at most M


SECONDS = st.floats(1e-3, 1e9)


@settings(max_examples=400, deadline=None)
@given(SECONDS, SECONDS)
def test_daly_is_always_shorter_than_young(c: float, m: float) -> None:
    assert daly(c, m) < young(c, m)
    if c < 2 * m:  # the gap in closed form: Young - Daly = C (2/3 - sqrt(2C/M)/18), so ~ 2C/3 for C << M
        assert young(c, m) - daly(c, m) == pytest.approx(c * (2 / 3 - math.sqrt(2 * c / m) / 18), rel=1e-6, abs=1e-9)


@settings(max_examples=400, deadline=None)
@given(st.floats(1e-8, 1.999), st.floats(1e-2, 1e9), st.floats(0, 1))
def test_daly_costs_no_more_than_young_in_daly_s_model(ratio: float, m: float, restart: float) -> None:
    c = ratio * m
    assert overhead(daly(c, m), c, m, restart * m) <= overhead(young(c, m), c, m, restart * m) * (1 + 1e-9)


@settings(max_examples=400, deadline=None)
@given(SECONDS, SECONDS, SECONDS)
def test_overhead_and_lost_work_bounds(tau: float, c: float, m: float) -> None:
    o = overhead(tau, c, m)
    assert o >= (c / tau + tau / (2 * m)) * (1 - 1e-9)  # e^x - 1 >= x + x^2/2
    lost = lost_work(tau, c, m)
    assert 0 < lost <= min(tau + c, m) * (1 + 1e-9)  # never more than one interval and one checkpoint


@settings(max_examples=200, deadline=None)
@given(st.floats(1e-3, 1e4), st.floats(1e3, 1e9))
def test_young_minimises_the_first_order_overhead(c: float, m: float) -> None:
    def first(t: float) -> float:
        return c / t + t / (2 * m)

    y = young(c, m)
    assert first(y) <= min(first(y * 0.99), first(y * 1.01))


@pytest.mark.parametrize("text,seconds", [("60", 60.0), ("12.5", 12.5), ("90s", 90.0), ("5m", 300.0),
                                          ("1:30", 90.0), ("2h", 7200.0)])
def test_cost_grammar(text: str, seconds: float) -> None:
    assert parse_seconds(text) == seconds


@pytest.mark.parametrize("text,seconds", [("6h", 21600.0), ("360", 21600.0), ("2-00:00:00", 172800.0),
                                          ("06:00:00", 21600.0), ("2d", 172800.0)])
def test_mtti_grammar(text: str, seconds: float) -> None:
    assert parse_mtti(text) == seconds  # the one grammar: a bare number is minutes


@pytest.mark.parametrize("s,text", [(45.25, "45.2s"), (1609.97, "26m 50s"), (3725, "1h 02m"), (183600, "2d 03h"),
                                    (math.inf, "inf")])
def test_format_seconds(s: float, text: str) -> None:
    assert format_seconds(s) == text


def advise(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, ["ckpt", "advise", *args])


def test_cli_prints_the_hand_computed_case() -> None:
    r = advise("--cost", "60", "--mtti", "6h")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == "checkpoint cost C:  60.00 s (1m 00s)" and lines[1] == "MTTI M:             21600.00 s (6h 00m)"
    assert lines[4].split()[:3] == ["Young", "1609.97", "s"] and lines[5].split()[:3] == ["Daly", "1570.22", "s"]
    assert lines[4].split()[5] == "7.84%"


def test_cli_json() -> None:
    r = advise("--cost", "2", "--mtti", "100s", "--restart", "10", "--json")
    data = json.loads(r.output)
    assert data["young_s"] == pytest.approx(20.0) and data["daly_s"] == pytest.approx(18.688889, rel=1e-6)
    assert data["restart_s"] == 10.0


@pytest.mark.parametrize("args,message", [
    (("--cost", "x", "--mtti", "6h"), "bad seconds 'x'"),
    (("--cost", "0", "--mtti", "6h"), "cost must be above 0"),
    (("--cost", "60", "--mtti", "0"), "MTTI must be above 0"),
    (("--cost", "60", "--mtti", "6x"), "bad duration '6x'"),
    (("--cost", "60",), "give one of --mtti DURATION and --partition P"),
    (("--mtti", "6h",), "Missing option '--cost'"),
])
def test_cli_usage_errors(args: tuple[str, ...], message: str) -> None:
    r = advise(*args)
    assert r.exit_code == 2 and message in r.output, r.output
