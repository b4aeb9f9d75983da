# SPDX-License-Identifier: Apache-2.0
"""Hypothesis: mutated example policies never crash the validator; every problem has the documented shape."""

from __future__ import annotations

import os
import re

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_gpu.policy import check_policy

EX = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "policies", "university.yaml")
with open(EX, encoding="utf-8") as fh:
    BASE = yaml.safe_load(fh)
SHAPE = re.compile(r"^.+\.yaml:\d+:\d+: \S.*: found .+, allowed .+$")

junk = st.one_of(st.none(), st.booleans(), st.integers(-3, 10 ** 6), st.floats(allow_nan=False),
                 st.text(max_size=8), st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=4),
                                                                                           st.integers(), max_size=2))


def paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from paths(v, (*prefix, i))


ALL = [p for p in paths(BASE) if p]


def mutate(path, value):
    import copy

    data = copy.deepcopy(BASE)
    cur = data
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return data


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(ALL), junk)
def test_mutations_never_crash(tmp_path, path, value) -> None:
    data = mutate(path, value)
    # relative topology paths stay valid next to the examples
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    r = check_policy(str(p))
    assert r.ok or r.errors
    for e in r.errors:
        assert SHAPE.match(e), e
