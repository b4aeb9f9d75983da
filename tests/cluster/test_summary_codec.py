# SPDX-License-Identifier: Apache-2.0
"""The AdminComment summary codec: round trip, survival of sacctmgr's lower-casing, garbage, caps, merge."""

from __future__ import annotations

import base64
import json
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_gpu.cluster.summary_codec import MAX_GPUS, MAX_TEXT, PREFIX, decode, encode, merge

pct = st.one_of(st.none(), st.floats(min_value=0, max_value=100, allow_nan=False).map(lambda x: round(x, 1)))
record = st.fixed_dictionaries({
    "gpu_index": st.one_of(st.none(), st.integers(0, 64)),
    "gpu_util_pct": pct, "mem_util_pct": pct,
    "max_memory_bytes": st.one_of(st.none(), st.integers(0, 200 * 10**9)),
    "energy_j": st.one_of(st.none(), st.floats(0, 1e9, allow_nan=False).map(lambda x: round(x, 1))),
    "start": st.just(1000.0), "end": st.one_of(st.none(), st.integers(1000, 10**7).map(float)),
})
per_node = st.dictionaries(st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True), st.lists(record, max_size=8),
                           max_size=6)


def _raw(doc: object) -> str:
    return PREFIX + base64.b32encode(zlib.compress(json.dumps(doc).encode())).decode().rstrip("=")


@settings(max_examples=150, deadline=None)
@given(per_node)
def test_round_trip(nodes):
    text = encode(nodes)
    assert text.startswith(PREFIX) and "|" not in text and '"' not in text and " " not in text
    back = decode(text)
    assert back is not None and back.omitted == 0
    assert set(back.nodes) == set(nodes)
    for node, recs in nodes.items():
        got = back.nodes[node]
        assert [g.index for g in got] == [r["gpu_index"] for r in recs]
        assert [g.gpu_util_pct for g in got] == [r["gpu_util_pct"] for r in recs]
        assert [g.max_memory_bytes for g in got] == [r["max_memory_bytes"] for r in recs]
        assert [g.seconds for g in got] == [None if r["end"] is None else r["end"] - 1000.0 for r in recs]
    # sacctmgr modify job (the only way after the end on 22.05) lower-cases the text: still the same summary
    assert decode(text.lower()) == back


def test_utilisation_is_weighted_by_gpu_seconds():
    s = decode(encode({"n1": [{"gpu_index": 0, "gpu_util_pct": 80.0, "start": 0.0, "end": 10.0},
                              {"gpu_index": 1, "gpu_util_pct": 20.0, "start": 0.0, "end": 30.0}]}))
    assert s is not None and s.gpus == 2
    assert abs(s.utilisation() - (0.8 * 10 + 0.2 * 30) / 40) < 1e-12  # 0.35, not the mean 0.5


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=300), st.binary(max_size=300).map(lambda b: PREFIX + b.hex()),
                 st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ234567=", max_size=200).map(lambda t: PREFIX + t)))
def test_garbage_is_none_never_an_exception(text):
    assert decode(text) is None or text.upper().startswith(PREFIX)


def test_wrong_shapes_are_none():
    bad = [None, 42, b"SG1:", "", "SG1:", "JS1:H4sIAAAA", "sg1:abc:x,y",  # the last: a real mangled lab comment
           _raw([1, 2]), _raw({"v": 2, "n": {}}), _raw({"v": 1, "n": {"a": [[0, 50, 1, 2, 3]]}}),
           _raw({"v": 1, "n": {"a": [[0, 150, 1, 2, 3, 4]]}}), _raw({"v": 1, "n": {"a": [[0, -1, 1, 2, 3, 4]]}}),
           _raw({"v": 1, "n": {"a": [["0", 5, 1, 2, 3, 4]]}}), _raw({"v": 1, "n": {"a": [[0.5, 5, 1, 2, 3, 4]]}}),
           _raw({"v": 1, "n": {"": []}}), _raw({"v": 1, "n": {"a": []}, "x": -1}),
           _raw({"v": 1, "n": {"a": [[True, 5, 1, 2, 3, 4]]}}), PREFIX + "A" * (MAX_TEXT + 100)]
    assert [decode(b) for b in bad] == [None] * len(bad)
    assert decode(_raw({"v": 1, "n": {"a": [[0, 5, None, 2, 3, 4]]}})) is not None  # the control case


def test_numbers_and_nesting_past_python_s_limits_are_none():
    """A 4,000-digit integer (under Python's 4,300-digit string limit: json reads it) in each field made
    float() raise OverflowError; 5,000 digits make json raise ValueError; nesting past the recursion
    limit, RecursionError. The decoder never raises."""
    big = int("9" * 4000)
    bad = [_raw({"v": 1, "n": {"a": [[0, 5, 1, 2, 3, 4][:k] + [big] + [0, 5, 1, 2, 3, 4][k + 1:]]}}) for k in range(6)]
    bad += [_raw({"v": 1, "n": {"a": [[0, 5, 1, 2, 3, 4]]}, "x": big}),
            PREFIX + base64.b32encode(zlib.compress(b'{"v":1,"n":{"a":[[0,' + b"9" * 5000 + b',1,2,3,4]]}}')).decode(),
            PREFIX + base64.b32encode(zlib.compress(b"[" * 200_000)).decode(),
            PREFIX + base64.b32encode(zlib.compress(b'{"v":1,"n":{"a":[[0,1e999,1,2,3,4]]}}')).decode()]
    assert [decode(b) for b in bad] == [None] * len(bad)
    assert merge(bad[1], "n1", []) is None  # not ours to overwrite either
    rec = {"gpu_index": big, "gpu_util_pct": big, "mem_util_pct": -big, "max_memory_bytes": big, "energy_j": big,
           "start": 0, "end": big}
    assert decode(encode({"n1": [rec]})).nodes == {"n1": ((None,) * 6,)}  # the hooks' side: never a crash either


def test_zip_bomb_and_too_many_gpus_are_refused():
    bomb = PREFIX + base64.b32encode(zlib.compress(b'{"v":1,"n":{},"pad":"' + b"a" * (8 << 20) + b'"}')).decode()
    assert len(bomb) < MAX_TEXT and decode(bomb) is None
    rows = [[i % 8, 50, 1, 2, 3, 4] for i in range(MAX_GPUS + 1)]
    assert decode(_raw({"v": 1, "n": {"a": rows}})) is None


def test_huge_input_is_capped_and_still_decodes():
    import random

    rng = random.Random(7)
    nodes = {f"node{n:05d}": [{"gpu_index": i, "gpu_util_pct": rng.randint(0, 1000) / 10,
                               "mem_util_pct": rng.randint(0, 1000) / 10, "max_memory_bytes": rng.getrandbits(36),
                               "energy_j": rng.getrandbits(30) / 10, "start": 0.0, "end": float(rng.getrandbits(20))}
                              for i in range(8)] for n in range(1500)}  # 12,000 GPUs of incompressible figures
    text = encode(nodes)
    assert len(text) <= MAX_TEXT
    s = decode(text)
    assert s is not None and s.gpus == 12000 and s.omitted > 0
    assert sum(len(v) for v in s.nodes.values()) == 12000 - s.omitted


def test_merge_adds_nodes_replaces_its_own_and_never_overwrites_others():
    a = [{"gpu_index": 0, "gpu_util_pct": 10.0, "start": 0.0, "end": 5.0}]
    b = [{"gpu_index": 3, "gpu_util_pct": 90.0, "start": 0.0, "end": 5.0}]
    one = merge(None, "n1", a)
    assert one is not None and merge("", "n1", a) == one and merge("(null)", "n1", a) == one
    two = merge(one, "n2", b)
    s = decode(two)
    assert s is not None and sorted(s.nodes) == ["n1", "n2"] and s.nodes["n2"][0].index == 3
    assert merge(two, "n2", b) == two  # an epilog that runs twice
    again = decode(merge(two, "n2", a))
    assert again is not None and again.nodes["n2"][0].gpu_util_pct == 10.0
    assert decode(merge(two.lower(), "n3", a)) is not None  # after sacctmgr lower-cased it
    for foreign in ("JS1:H4sIAAAAAAAAA6tWKkktLlGyUkpKLVGqBQB3Qw6bEAAAAA==", "site note: keep", "SG1:!!"):
        assert merge(foreign, "n1", a) is None
