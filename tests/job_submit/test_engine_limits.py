# SPDX-License-Identifier: Apache-2.0
"""The engine inside slurmctld costs little whatever a user sends, and leaves admins' updates alone."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from slurm_gpu.policy import load_policy

pytest.importorskip("lupa.lua51")
from tests.job_submit.lua_harness import Plugin  # noqa: E402

POLICY = Path(__file__).resolve().parents[2] / "examples" / "policies" / "university.yaml"


@pytest.fixture(scope="module")
def plugin() -> Plugin:
    return Plugin(load_policy(str(POLICY)))


@pytest.mark.parametrize("field", ["tres_per_job", "tres_per_node", "tres_per_task"])
def test_a_huge_gres_list_is_refused_before_it_is_parsed(plugin: Plugin, field: str) -> None:
    # 16,000 distinct types cost ~10 s of quadratic work per call before the cap
    big = ",".join(f"gres/gpu:t{i}:1" for i in range(16000))
    t0 = time.perf_counter()
    rc, after, log = plugin.submit({field: big, "script": "#!/bin/sh\n", "user_name": "u"})
    assert time.perf_counter() - t0 < 0.5
    assert rc == -1 and after[field] == big
    assert [kind for kind, _ in log if kind == "user"] and "more than 64 items" in log[0][1]


def test_sixty_three_items_are_still_read(plugin: Plugin) -> None:
    items = ",".join(["gres:gpu:h100:1"] + [f"gres:license{i}:1" for i in range(62)])
    rc, after, _ = plugin.submit({"tres_per_node": items, "script": "#!/bin/sh\n", "user_name": "u",
                                  "time_limit": 60})
    assert rc == 0 and after["partition"] == "batch"


def test_an_update_by_someone_else_than_the_owner_is_theirs_to_make(plugin: Plugin) -> None:
    rec = {"user_id": 1001, "partition": "batch", "qos": "normal", "time_limit": 60,
           "tres_per_job": "gres:gpu:h100:2", "script": "#!/bin/sh\n"}
    assert plugin.modify({"time_limit": 99999}, rec, uid=1001)[0] == -1  # the owner: over batch's 2 days
    assert plugin.modify({"time_limit": 99999}, rec, uid=64030)[0] == 0  # SlurmUser / an operator
    assert plugin.modify({"time_limit": 99999}, rec, uid=0)[0] == 0
