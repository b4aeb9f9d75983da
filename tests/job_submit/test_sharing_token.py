# SPDX-License-Identifier: Apache-2.0
"""The slurm-gpu MIG/MPS token in the job comment: job_submit.lua's ``check_sharing`` decides what the
Python classifier's step of the same name decides (docs/mig_mps.md).

1. The grammar: Hypothesis comments built from the token's own pieces; the Lua reader (``read_token``)
   and ``slurm_gpu.sharing.token.decode`` agree on none / bad / the parsed request.
2. Every token of the differential generator against a grid of GPU requests and partitions, on every
   example policy and the MIG one, in both releases' job_desc: the same accept/reject, partition,
   QOS, gres and message; and on the MIG policy every outcome of the step is reached.
3. Hand-written decisions for the cases the docs promise.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_gpu.errors import SlurmGpuError
from slurm_gpu.sharing import token as token
from slurm_gpu.policy import load_policy
from slurm_gpu.slurm.job_desc import ModelGap

pytest.importorskip("lupa.lua51")
from tests.job_submit.lua_harness import Plugin, lua_decision, py_decision, python_side, spellings  # noqa: E402
from tests.job_submit.test_differential import POLICIES, TOKENS, VERSIONS  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MIG_POLICY = "mig/university-mig"


def load(name: str) -> Any:
    return load_policy(str(ROOT / "examples" / "policies" / f"{name}.yaml"))


@pytest.fixture(scope="module")
def mig_plugin() -> Plugin:
    return Plugin(load(MIG_POLICY))


# ---- 1. the grammar ---------------------------------------------------------------------------

PIECES = ["slurm-gpu:", "slurm-gpu:", "mig", "mps", "=", "=", ":", ",", " ", "\t", "\n", "\x1c", "1g.10gb", "3g.40gb",
          "2g.20gb", "7g.80gb", "+me", "a100_", "0", "1", "2", "7", "8", "9", "25", "100", "101", "g.", "gb", "x", "."]


def python_token(comment: str) -> Any:
    try:
        req = token.decode(comment)
    except token.RequestError:
        return False
    if req is None:
        return None
    return {"mps": req.mps_pct} if req.mps_pct is not None else {"mig": [[p, n] for p, n in req.mig]}


def lua_token(plugin: Plugin, comment: str) -> Any:
    got = plugin.engine.read_token(comment)
    if got is None or got is False:
        return got
    if got["mps"] is not None:
        return {"mps": int(got["mps"])}
    return {"mig": [[it[1], int(it[2])] for it in got["mig"].values()]}


VALUE_PIECES = ["1g.10gb", "3g.40gb", "2g.20gb", "7g.80gb", "4g.40gb", "1g.010gb", "1g.12345gb", "1g.1000gb", "+me",
                ":", ":1",
                ":7", ":8", ":0", ",", "a100_", "0", "1", "007", "10", "25", "50", "99", "100", "101", "1000", "=", ""]
MIG_LISTS = st.lists(st.tuples(st.sampled_from(["1g.10gb", "2g.20gb", "3g.40gb", "1g.10gb+me", "1g.1000gb", "1g.11gb",
                                                "1g.12gb", "1g.13gb", "1g.14gb", "1g.15gb", "1g.16gb"]),
                               st.sampled_from(["", "", ":1", ":2", ":7", ":0", ":8", ":"])).map("".join),
                     min_size=1, max_size=9).map(",".join)
TOKEN_LIKE = st.tuples(st.sampled_from(["slurm-gpu:", "slurm-gpu:", "Slurm-gpu:", "x slurm-gpu:", "xslurm-gpu:"]),
                       st.sampled_from(["mig", "mps", "mig", "mps", "MIG", ""]), st.sampled_from(["=", "=", ""]),
                       st.one_of(st.lists(st.sampled_from(VALUE_PIECES), max_size=8).map("".join), MIG_LISTS),
                       st.sampled_from(["", "", " note", " slurm-gpu:mps=25", "\tx"])).map("".join)
COMMENTS = st.one_of(TOKEN_LIKE, st.lists(st.sampled_from(PIECES), max_size=14).map("".join))


@settings(max_examples=3000, deadline=None, database=None)
@given(comment=COMMENTS)
def test_the_lua_reads_the_token_as_python_does(comment: str) -> None:
    plugin = _READER
    assert lua_token(plugin, comment) == python_token(comment), repr(comment)


_READER = Plugin(load("university"))


@pytest.mark.parametrize("comment", [*TOKENS, "a " * 2100 + "slurm-gpu:mps=25", "a " * 2100, "",
                                     "slurm-gpu:mps=25 slurm-gpu:mps=25", "slurm-gpu:mps=25\x1fx", "x" * 200])
def test_the_lua_reads_each_listed_token_as_python_does(comment: str) -> None:
    assert lua_token(_READER, comment) == python_token(comment or None)


def test_the_grammar_test_is_not_vacuous() -> None:
    """The reader's answers cover none, bad, a layout and a share."""
    kinds = {type(python_token(t)).__name__ + (str(sorted(python_token(t))) if isinstance(python_token(t), dict)
                                               else "") for t in [*TOKENS, "plain"]}
    assert kinds == {"NoneType", "bool", "dict['mig']", "dict['mps']"}


# ---- 2. the grid ------------------------------------------------------------------------------

GPUS = [[], ["--gpus=a100:1"], ["--gres=gpu:a100:2"], ["--gpus=h100:1"], ["--gpus=2"],
        ["--gres=gpu:a100_2g.20gb:1"], ["--gpus=h100:1,a100:1"]]
PARTS = [[], ["--partition=mig"], ["--partition=batch"]]


def grid_cases() -> list[list[str]]:
    out = []
    for tok in [*TOKENS, "run-1 slurm-gpu:mps=25", "slurm-gpu:mig=3g.40gb:2\tnotes"]:
        for gpus in GPUS:
            for part in PARTS:
                out.append(["sbatch", "--hold", *gpus, *part, f"--comment={tok}", "job.sh"])
    return out


@pytest.mark.parametrize("policy_name", [*POLICIES])
def test_check_sharing_decides_alike_on_every_token(policy_name: str) -> None:
    policy = load(policy_name)
    plugin = Plugin(policy)
    seen: Counter[str] = Counter()
    for argv in grid_cases():
        for version in VERSIONS:
            try:
                _request, decision, descs = python_side(argv, version, policy)
            except (ValueError, SlurmGpuError, ModelGap):
                seen["refused by the client"] += 1
                continue
            want = py_decision(decision)
            for jd in spellings(descs[0]):
                got = lua_decision(plugin.decide(jd))
                assert got == want, f"{' '.join(argv)} on {version}: Lua {got} != Python {want}"
                seen["cases"] += 1
                seen[_outcome(want)] += 1
    assert seen["cases"] > 1000, seen
    if policy_name == MIG_POLICY:  # every outcome of the step
        for outcome in ("accepted", "bad token", "whole GPUs", "not dynamic", "not offered", "too many slices",
                        "share outside"):
            assert seen[outcome], (outcome, seen)


def _outcome(d: dict[str, Any]) -> str:
    if d["accepted"]:
        return "accepted"
    m = d["message"] or ""
    for key, text in (("bad token", "bad slurm-gpu token"), ("whole GPUs", "needs whole GPUs"),
                      ("not dynamic", "does not serve per-job MIG"), ("not offered", "is not offered on"),
                      ("too many slices", "compute slices; a GPU has 7"), ("share outside", "MPS share")):
        if text in m:
            return key
    return "other rejection"


# ---- 3. what the docs promise -------------------------------------------------------------------

CASES = [
    (["--gpus=a100:2", "--comment=slurm-gpu:mig=3g.40gb:2"], True, None),
    (["--gres=gpu:a100:1", "--comment=my run slurm-gpu:mig=1g.10gb:2,2g.20gb:1"], True, None),
    (["--gpus=h100:4", "--comment=slurm-gpu:mps=25"], True, None),
    (["--gpus=h100:1", "--comment=slurm-gpu:mig=3g.40gb:2"], False,
     "invalid request: node type h100x8 does not serve per-job MIG layouts (mig_mode none); ask for a MIG slice as "
     "a gres type instead"),
    (["--gpus=a100:1", "--partition=mig", "--comment=slurm-gpu:mig=3g.40gb"], False,
     "invalid request: node type a100mig does not serve per-job MIG layouts (mig_mode static); ask for a MIG slice "
     "as a gres type instead"),
    (["--gpus=a100:1", "--comment=slurm-gpu:mig=7g.80gb"], False,
     "invalid request: MIG profile 7g.80gb is not offered on a100 GPUs; allowed: 1g.10gb, 2g.20gb, 3g.40gb"),
    (["--gpus=a100:1", "--comment=slurm-gpu:mig=3g.40gb:2,1g.10gb:2"], False,
     "invalid request: MIG layout 3g.40gb:2,1g.10gb:2 needs 8 compute slices; a GPU has 7"),
    (["--gpus=a100:1", "--comment=slurm-gpu:mps=75"], False,
     "invalid request: MPS share 75% is outside the allowed 10-50%"),
    (["--gres=gpu:a100_2g.20gb:1", "--comment=slurm-gpu:mps=25"], False,
     "invalid request: a slurm-gpu MIG layout or MPS share needs whole GPUs of one type"),
    (["--gpus=a100:1", "--comment=slurm-gpu:mig=3g.40gb:8"], False,
     "invalid request: bad slurm-gpu token in the job comment"),
    (["--gpus=a100:1", "--comment=slurm-gpu:mps=25 slurm-gpu:mig=1g.10gb"], False,
     "invalid request: bad slurm-gpu token in the job comment"),
    (["--gpus=a100:1", "--comment=not-a-token:slurm-gpu:mps=999"], True, None),
]


@pytest.mark.parametrize(("args", "accepted", "message"), CASES)
def test_documented_decisions(mig_plugin: Plugin, args: list[str], accepted: bool, message: str | None) -> None:
    argv = ["sbatch", "--hold", *args, "job.sh"]
    for version in VERSIONS:
        _request, decision, descs = python_side(argv, version, mig_plugin.policy)
        assert decision.accepted is accepted, decision
        if message is not None:
            assert decision.message == message
        assert lua_decision(mig_plugin.decide(descs[0])) == py_decision(decision)
