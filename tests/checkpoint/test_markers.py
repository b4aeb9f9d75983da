# SPDX-License-Identifier: Apache-2.0
"""The pure marker core: validation, complete steps, pruning, the default step, the environment contract."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_gpu.checkpoint import contract
from slurm_gpu.checkpoint.markers import (
    MAX_MARKER_BYTES,
    Marker,
    MarkerError,
    complete_steps,
    marker_name,
    next_step,
    parse_marker,
    parse_name,
    prune_names,
    to_dict,
    to_json,
)

GOOD = {"schema": "gpusub-ckpt-marker", "version": 1, "step": 5, "path": "/ck/s5", "rank": 1, "world_size": 2,
        "time": 1700000000.5, "job_id": "42", "restart_count": 0, "cost_s": 3.5, "host": "h100n1"}


def raw(**changes: object) -> bytes:
    data = {**GOOD, **changes}
    return json.dumps({k: v for k, v in data.items() if v is not ...}).encode()


def test_a_good_marker_reads_back() -> None:
    m = parse_marker(raw(), "gpusub-marker.5.1.json")
    assert (m.step, m.path, m.rank, m.world_size, m.job_id, m.cost_s, m.host) == (5, "/ck/s5", 1, 2, "42", 3.5,
                                                                                   "h100n1")
    assert parse_marker(to_json(m)) == m
    assert to_json(m).endswith(b"\n") and to_json(m).count(b"\n") == 1


@pytest.mark.parametrize("blob,why", [
    (raw(schema="other"), "schema"),
    (raw(version=2), "version 2"),
    (raw(version=True), "version true"),
    (raw(extra=1), "unknown keys extra"),
    (raw(host=...), "missing keys host"),
    (raw(step=-1), "step must be"),
    (raw(step=1.5), "step must be"),
    (raw(step=True), "step must be"),
    (raw(step=10 ** 16), "step must be"),
    (raw(rank=2), "rank must be a whole number 0..1"),
    (raw(world_size=0), "world_size"),
    (raw(path=""), "path must be non-empty"),
    (raw(path=None), "path must be non-empty"),
    (raw(path="/a\nb"), "control character"),
    (raw(path="x" * 4097), "longer than 4096"),
    (raw(time=-1), "time must be a finite number"),
    (raw(cost_s="3"), "cost_s must be"),
    (raw(job_id=42), "job_id must be"),
    (raw(job_id="42; rm"), "job_id must be"),
    (raw(host=""), "host must be"),
    (raw(restart_count=-1), "restart_count"),
    (b'{"time": NaN}', "NaN is not a number"),
    (b'{"a": Infinity}', "Infinity is not a number"),
    (b"[1, 2]", "not a JSON object but list"),
    (b"\xff\xfe", "not UTF-8"),
    (b"{", "not JSON"),
    (b"", "not JSON"),
    (b"[" * 100_000, "larger than"),
    (b"[" * 60_000, "nested too deeply"),
    (b" " * (MAX_MARKER_BYTES + 1), "larger than 65536 bytes"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_bad_markers_are_refused_with_the_reason(blob: bytes, why: str) -> None:
    with pytest.raises(MarkerError, match=why.replace("(", r"\(").replace(".", r"\.")):
        parse_marker(blob)


def test_the_file_name_must_match_the_content() -> None:
    with pytest.raises(MarkerError, match="file name says 'gpusub-marker.6.1.json'"):
        parse_marker(raw(), "gpusub-marker.6.1.json")


@pytest.mark.parametrize("name,expected", [
    ("gpusub-marker.0.0.json", (0, 0)),
    ("gpusub-marker.120.3.json", (120, 3)),
    ("gpusub-marker.007.0.json", None),  # one spelling per step: no leading zeros
    ("gpusub-marker.1.0.json.tmp", None),
    (".gpusub-marker.1.0.json.123.ab.tmp", None),
    ("gpusub-marker.1.json", None),
    ("gpusub-marker.-1.0.json", None),
    ("gpusub-marker.1.0.json/", None),
    ("GPUSUB-MARKER.1.0.json", None),
])
def test_marker_names(name: str, expected: tuple[int, int] | None) -> None:
    assert parse_name(name) == expected
    if expected is not None:
        assert marker_name(*expected) == name


def m(step: int, rank: int = 0, world: int = 1, restart: int = 0, job: str | None = "7", path: str = "") -> Marker:
    return Marker(step=step, path=path or f"/ck/{step}/{rank}", rank=rank, world_size=world, time=float(step),
                  job_id=job, restart_count=restart)


def steps(markers: list[Marker]) -> list[int]:
    return [s.step for s in complete_steps(markers)]


def test_a_step_is_complete_only_when_every_rank_marked_it() -> None:
    four = [m(10, r, 4) for r in range(4)]
    assert steps(four) == [10]
    assert steps(four[:3]) == []  # rank 3 has not marked
    assert steps(four[1:]) == []  # rank 0 has not marked
    late = four + [m(20, r, 4) for r in (0, 1, 3)]
    assert steps(late) == [10]  # a rank that does not mark leaves the previous step the resume point
    assert complete_steps(late)[0].path == "/ck/10/0" and complete_steps(late)[0].path_of(2) == "/ck/10/2"


def test_the_ranks_of_a_complete_step_share_one_run() -> None:
    mixed_world = [m(10, 0, 2), m(10, 1, 4)]
    assert steps(mixed_world) == []
    mixed_run = [m(10, 0, 2, restart=0), m(10, 1, 2, restart=1)]  # shards of two runs are no checkpoint
    assert steps(mixed_run) == []
    mixed_job = [m(10, 0, 2, job="7"), m(10, 1, 2, job="8")]
    assert steps(mixed_job) == []
    # a smaller world overwrote ranks 0-1; the old world's ranks 2-3 are stragglers and do not matter
    shrunk = [m(10, 0, 2, restart=1), m(10, 1, 2, restart=1), m(10, 2, 4), m(10, 3, 4)]
    assert steps(shrunk) == [10] and len(complete_steps(shrunk)[0].markers) == 2


def test_newest_is_the_highest_step_number_not_the_latest_time() -> None:
    old_high = Marker(step=90, path="/ck/90", time=100.0)
    new_low = Marker(step=50, path="/ck/50", time=200.0)
    assert steps([new_low, old_high]) == [90, 50]


def test_cost_and_time_of_a_step() -> None:
    ms = [Marker(step=1, path="/p", rank=r, world_size=3, time=10.0 + r, cost_s=c) for r, c in
          enumerate([2.0, None, 5.5])]
    s = complete_steps(ms)[0]
    assert (s.cost_s, s.time) == (5.5, 12.0)  # the slowest rank, the last rank's time
    assert complete_steps([Marker(step=1, path="/p")])[0].cost_s is None


@pytest.mark.parametrize("entries,complete,keep,expected", [
    ([("a1", 1), ("a2", 2), ("a3", 3)], [1, 2, 3], 3, []),  # exactly K complete: keep all
    ([("a1", 1), ("a2", 2), ("a3", 3), ("a4", 4)], [1, 2, 3, 4], 3, ["a1"]),
    ([("a1", 1), ("b1", 1), ("a2", 2), ("x3", 3), ("a4", 4), ("a5", 5)], [2, 4, 5], 2, ["a1", "a2", "b1", "x3"]),
    ([("a1", 1), ("a9", 9)], [1], 1, []),  # incomplete steps newer than the kept ones stay
    ([("a1", 1), ("a2", 2)], [], 1, []),  # nothing complete: nothing goes
    ([("a5", 5), ("a3", 3)], [5, 3], 1, ["a3"]),
])
def test_prune(entries: list[tuple[str, int]], complete: list[int], keep: int, expected: list[str]) -> None:
    assert prune_names(entries, complete, keep) == expected


def test_prune_needs_a_positive_k() -> None:
    with pytest.raises(ValueError):
        prune_names([], [1], 0)


def test_next_step() -> None:
    assert next_step([], 0) == 0
    assert next_step([m(4, 0, 2), m(9, 1, 2)], 0) == 5
    assert next_step([m(4, 0, 2), m(9, 1, 2)], 1) == 10


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10 ** 15),
       st.integers(1, 1 << 20).flatmap(lambda w: st.tuples(st.just(w), st.integers(0, w - 1))),
       st.text(st.characters(min_codepoint=32, blacklist_categories=("Cs",)), min_size=1, max_size=300)
       .filter(lambda p: "\x7f" not in p),
       st.floats(0, 1e11), st.one_of(st.none(), st.floats(0, 1e6)), st.integers(0, 1 << 31))
def test_every_marker_reads_back(step: int, rank_world: tuple[int, int], path: str, time: float,
                                 cost: float | None, restart: int) -> None:
    world, rank = rank_world
    marker = Marker(step=step, path=path, rank=rank, world_size=world, time=time, job_id="123",
                    restart_count=restart, cost_s=cost, host="n1")
    back = parse_marker(to_json(marker), marker_name(step, rank))
    assert to_dict(back) == to_dict(marker)


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.binary(max_size=300), st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=12)),
    max_leaves=30).map(lambda v: json.dumps(v).encode())))
def test_any_bytes_give_a_marker_or_a_marker_error(blob: bytes) -> None:
    try:
        parse_marker(blob)
    except MarkerError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(GOOD)), st.one_of(
    st.none(), st.booleans(), st.integers(-5, 10 ** 17), st.floats(), st.text(max_size=10)), max_size=11))
def test_mutated_markers_never_crash(changes: dict[str, object]) -> None:
    blob = json.dumps({**GOOD, **changes}).encode()
    try:
        marker = parse_marker(blob)
    except MarkerError:
        return
    assert 0 <= marker.rank < marker.world_size and marker.path


# ---- the environment contract ----------------------------------------------------------------------

STEP = {"SLURM_STEP_ID": "0"}


@pytest.mark.parametrize("env,expected", [
    ({}, (0, 1, "single process")),
    ({"SLURM_PROCID": "0", "SLURM_NTASKS": "4"}, (0, 1, "single process")),  # the batch script is no step
    ({**STEP, "SLURM_PROCID": "2", "SLURM_NTASKS": "4"}, (2, 4, "SLURM_PROCID/SLURM_NTASKS")),
    ({**STEP, "SLURM_PROCID": "2", "SLURM_NTASKS": "8", "SLURM_STEP_NUM_TASKS": "4"},
     (2, 4, "SLURM_PROCID/SLURM_STEP_NUM_TASKS")),
    ({**STEP, "SLURM_PROCID": "1", "SLURM_STEP_NUM_TASKS": "2", "RANK": "5", "WORLD_SIZE": "16"},
     (5, 16, "RANK/WORLD_SIZE")),  # torchrun's worker rank wins over Slurm's task id
    ({"RANK": "3", "WORLD_SIZE": "4"}, (3, 4, "RANK/WORLD_SIZE")),
    ({"RANK": "3", **STEP, "SLURM_PROCID": "1", "SLURM_STEP_NUM_TASKS": "2"},
     (1, 2, "SLURM_PROCID/SLURM_STEP_NUM_TASKS")),  # RANK without WORLD_SIZE is no pair
    # 26.05's batch script: SLURM_STEP_ID=-5 (the batch step), SLURM_PROCID=0 SLURM_NTASKS=4: no srun step
    ({"SLURM_STEP_ID": "-5", "SLURM_PROCID": "0", "SLURM_NTASKS": "4"}, (0, 1, "single process")),
    ({"SLURM_STEP_ID": "4294967291", "SLURM_PROCID": "0", "SLURM_NTASKS": "4"}, (0, 1, "single process")),
    ({"SLURM_STEP_ID": "-4", "SLURM_PROCID": "0", "SLURM_NTASKS": "2"}, (0, 1, "single process")),  # extern
    ({"SLURM_STEP_ID": "7", "SLURM_PROCID": "1", "SLURM_NTASKS": "2"}, (1, 2, "SLURM_PROCID/SLURM_NTASKS")),
])
def test_identity_precedence(env: dict[str, str], expected: tuple[int, int, str]) -> None:
    assert contract.identity(env) == expected


@pytest.mark.parametrize("env", [
    {"RANK": "4", "WORLD_SIZE": "4"}, {"RANK": "x", "WORLD_SIZE": "4"}, {"RANK": "0", "WORLD_SIZE": "0"},
    {**STEP, "SLURM_PROCID": "-1", "SLURM_NTASKS": "2"}, {"RANK": "1" * 30, "WORLD_SIZE": "2"},
])
def test_bad_identity_is_an_error(env: dict[str, str]) -> None:
    with pytest.raises(contract.ContractError):
        contract.identity(env)


def test_restart_count_job_id_keep() -> None:
    assert contract.restart_count({}) == 0
    assert contract.restart_count({"SLURM_RESTART_COUNT": "2"}) == 2
    assert contract.restart_count({"GPUSUB_RESTART_COUNT": "5", "SLURM_RESTART_COUNT": "2"}) == 5
    assert contract.restart_count({"GPUSUB_RESTART_COUNT": "x", "SLURM_RESTART_COUNT": "2"}) == 2
    assert contract.job_id({"SLURM_JOB_ID": "1234"}) == "1234"
    assert contract.job_id({"SLURM_JOB_ID": "12a"}) is None and contract.job_id({}) is None
    assert contract.keep({}) == 3 and contract.keep({"GPUSUB_CKPT_KEEP": "7"}) == 7
    for bad in ("0", "1001", "-1", "three"):
        with pytest.raises(contract.ContractError, match="GPUSUB_CKPT_KEEP"):
            contract.keep({"GPUSUB_CKPT_KEEP": bad})


@pytest.mark.parametrize("text,expected", [
    (None, "USR2"), ("", "USR2"), ("USR1", "USR1"), ("sigusr1", "USR1"), (" SIGTERM ", "TERM"), ("hup", "HUP"),
])
def test_signal_names(text: str | None, expected: str) -> None:
    assert contract.signal_name(text) == expected


@pytest.mark.parametrize("text", ["KILL", "SIGKILL", "9", "USR3", "STOP"])
def test_bad_signal_names(text: str) -> None:
    with pytest.raises(contract.ContractError, match="not a stop signal"):
        contract.signal_name(text)


def test_the_policy_declares_the_contract_defaults() -> None:
    from slurm_gpu.policy.model import Defaults

    d = Defaults()
    assert (d.ckpt_signal, d.ckpt_keep, d.ckpt_grace_s) == ("USR2", 3, 60)


POLICY = Path(__file__).resolve().parents[2] / "examples" / "policies" / "smallgroup.yaml"


def _policy(tmp_path: Path, lines: str) -> tuple[object, list[str]]:
    from slurm_gpu.policy import check_policy

    text = POLICY.read_text(encoding="utf-8").replace("  signal_lead_time: 2m\n", "  signal_lead_time: 2m\n" + lines)
    assert lines in text
    for name in os.listdir(POLICY.parent):  # its includes, beside it
        if (POLICY.parent / name).is_file():
            (tmp_path / name).write_bytes((POLICY.parent / name).read_bytes())
    (tmp_path / "p.yaml").write_text(text, encoding="utf-8")
    result = check_policy(str(tmp_path / "p.yaml"))
    return result.policy, list(result.errors)


def test_policy_keys_are_read_and_validated(tmp_path: Path) -> None:
    policy, errors = _policy(tmp_path, "  ckpt_signal: SIGUSR1\n  ckpt_grace: 90s\n  ckpt_keep: 5\n")
    assert errors == [] and policy is not None
    d = policy.defaults  # type: ignore[attr-defined]
    assert (d.ckpt_signal, d.ckpt_grace_s, d.ckpt_keep) == ("USR1", 90, 5)


@pytest.mark.parametrize("line,field", [("ckpt_signal: KILL", "ckpt_signal"), ("ckpt_keep: 0", "ckpt_keep"),
                                        ("ckpt_keep: 1001", "ckpt_keep"), ("ckpt_grace: soon", "ckpt_grace")])
def test_bad_policy_keys_are_one_error_each(tmp_path: Path, line: str, field: str) -> None:
    _, errors = _policy(tmp_path, f"  {line}\n")
    assert len(errors) == 1 and field in errors[0] and "p.yaml:" in errors[0], errors


def test_special_step_ids_come_from_the_release_table() -> None:
    """Every batch-script SLURM_STEP_ID the release table records (26.05: -5) is no srun step."""
    from slurm_gpu.slurm.release import BATCH_STEP_ID_ENV, SPECIAL_STEP_IDS, srun_step_id

    assert [v for _, v in BATCH_STEP_ID_ENV if v is not None] == ["-5"]
    for text in [v for _, v in BATCH_STEP_ID_ENV if v is not None] + list(SPECIAL_STEP_IDS):
        assert srun_step_id(text) is None, text
    assert [srun_step_id(t) for t in ("0", "12", " 3 ", "x", "", None, "-1")] == [0, 12, 3, None, None, None, None]
