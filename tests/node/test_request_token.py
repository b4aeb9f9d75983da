# SPDX-License-Identifier: Apache-2.0
"""The slurm-gpu token in the job comment: tolerant of other text, strict about our own; the outcome file."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurm_gpu.sharing.token import (
    JobRequest,
    Outcome,
    RequestError,
    decode,
    encode,
    failed,
    ok,
    task_prolog_lines,
    with_token,
)


@pytest.mark.parametrize(("comment", "expected"), [
    (None, None),
    ("", None),
    ("my experiment 42", None),
    ("slurm-gpu:mig=3g.40gb:2", JobRequest(mig=(("3g.40gb", 2),))),
    ("run 7 slurm-gpu:mig=1g.10gb:2,2g.20gb:1 tuned", JobRequest(mig=(("1g.10gb", 2), ("2g.20gb", 1)))),
    ("slurm-gpu:mig=3g.40gb", JobRequest(mig=(("3g.40gb", 1),))),
    ("slurm-gpu:mig=1g.10gb+me:1", JobRequest(mig=(("1g.10gb+me", 1),))),
    ("gpusub:gpus=2 slurm-gpu:mps=25", JobRequest(mps_pct=25)),
    ("slurm-gpu:mps=100", JobRequest(mps_pct=100)),
])
def test_decode_reads_our_token_among_other_text(comment, expected):
    assert decode(comment) == expected


@pytest.mark.parametrize("comment", [
    "slurm-gpu:mig=3g.40gb:2 slurm-gpu:mps=25",  # two tokens
    "slurm-gpu:mps=0", "slurm-gpu:mps=101", "slurm-gpu:mps=25.5", "slurm-gpu:mps=-5", "slurm-gpu:mps=",
    "slurm-gpu:mps=٢٥",  # non-ASCII digits
    "slurm-gpu:mig=3g.40gb:8", "slurm-gpu:mig=3g.40gb:0", "slurm-gpu:mig=3g.40gb:", "slurm-gpu:mig=9g.40gb",
    "slurm-gpu:mig=a100_3g.40gb:1",  # the GPU type is the node's, not the request's
    "slurm-gpu:mig=3g.40gb:1,3g.40gb:1",  # repeated profile
    "slurm-gpu:mig=1g.10gb,1g.20gb,2g.20gb,3g.40gb,4g.40gb,7g.80gb,1g.10gb+me,1g.5gb",  # 8 items
    "slurm-gpu:mig=", "slurm-gpu:mig", "slurm-gpu:", "slurm-gpu:shell=rm", "slurm-gpu:MIG=3g.40gb",
    "slurm-gpu:mig=3G.40GB:1",
    "slurm-gpu:mps=25" + "x" * 200,
    "slurm-gpu:mps=25 " + "a" * 5000,  # a long comment with our token is refused, not searched
])
def test_decode_is_strict_about_our_token(comment):
    with pytest.raises(RequestError) as e:
        decode(comment)
    assert "\n" not in str(e.value) and len(str(e.value)) < 400


def test_long_comment_without_token_is_ignored():
    assert decode("a" * 10000) is None


mig_specs = st.lists(st.sampled_from(["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", "1g.10gb+me"]),
                     min_size=1, max_size=7, unique=True).flatmap(
    lambda ps: st.tuples(*[st.tuples(st.just(p), st.integers(1, 7)) for p in ps]))
requests = st.one_of(mig_specs.map(lambda m: JobRequest(mig=m)),
                     st.integers(1, 100).map(lambda p: JobRequest(mps_pct=p)))
other_words = st.lists(st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=12)
                       .filter(lambda w: not w.startswith("slurm-gpu:")), max_size=5)


@given(requests, other_words)
def test_encode_decode_round_trip_keeps_other_text(req, words):
    comment = with_token(" ".join(words), req)
    assert decode(comment) == req
    assert with_token(comment, None).split() == words
    assert decode(with_token(comment, None)) is None


def test_encode_refuses_both_or_neither():
    with pytest.raises(RequestError):
        encode(JobRequest())
    with pytest.raises(RequestError):
        encode(JobRequest(mig=(("3g.40gb", 1),), mps_pct=20))
    assert encode(JobRequest(mig=(("3g.40gb", 2),))) == "slurm-gpu:mig=3g.40gb:2"
    assert encode(JobRequest(mps_pct=25)) == "slurm-gpu:mps=25"


def test_outcome_file_round_trip_and_strict_reading():
    good = ok({"CUDA_VISIBLE_DEVICES": "MIG-1,MIG-2"})
    assert Outcome.from_json(good.to_json()) == good
    bad = failed("MIG profile 9g.1gb is not offered\non a100 GPUs")
    assert Outcome.from_json(bad.to_json()) == bad and "\n" not in bad.message
    for text in ('{"ok": true}', '[]', '{"ok": 1, "message": "", "fault": "", "env": {}}',
                 '{"ok": true, "message": "", "fault": "", "env": {"A B": "x"}}',
                 '{"ok": true, "message": "", "fault": "", "env": {"A": "x\\ny"}}',
                 '{"ok": true, "message": "", "fault": "disk", "env": {}}', "{", "x" * 70000):
        with pytest.raises(ValueError):
            Outcome.from_json(text)


def test_task_prolog_lines():
    assert task_prolog_lines(ok({"CUDA_MPS_PIPE_DIRECTORY": "/run/slurm-gpu/mps/7/pipe"})) == (
        ["export CUDA_MPS_PIPE_DIRECTORY=/run/slurm-gpu/mps/7/pipe"], 0)
    lines, rc = task_prolog_lines(failed("MPS share 5% is outside the allowed 10-50%"))
    assert rc == 1 and lines == ["print slurm-gpu: GPU setup failed: MPS share 5% is outside the allowed 10-50%"]
