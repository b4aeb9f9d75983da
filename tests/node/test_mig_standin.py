# SPDX-License-Identifier: Apache-2.0
"""The MIG executor (slurm_gpu.adapters.gpu_config) over the stand-in libnvidia-ml.so.1, each check in
a fresh process (pynvml finds the library through LD_LIBRARY_PATH at process start)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.nvml_standin.shared import standin_env, standin_lib, state, write_node

MIG_UUID = re.compile(r"MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
PRELUDE = """\
import json
from slurm_gpu.adapters import gpu_config as G
from slurm_gpu.sharing import mig as M
def out(o):
    print(json.dumps(o if not hasattr(o, "ok") else [o.ok, o.fault, o.message, dict(o.env)]))
"""


class Node:
    def __init__(self, path: Path, lib: Path):
        self.path, self.lib = path, lib

    def run(self, code: str, timeout: float = 60, **env: str):
        full = standin_env(self.lib, self.path, **env)
        r = subprocess.run([sys.executable, "-c", PRELUDE + code], env=full, capture_output=True, text=True,
                           timeout=timeout, check=False)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout.strip().splitlines()[-1])

    def gpus(self) -> list[dict]:
        return state.read(self.path)["gpus"]


@pytest.fixture(scope="module")
def lib() -> Path:
    return standin_lib()


@pytest.fixture
def node(lib, tmp_path):
    def make(edit=None) -> Node:
        return Node(write_node(tmp_path / "node.state", edit=edit), lib)

    return make


def _mig_keys(gpu: dict) -> dict:
    return {k: v for k, v in gpu.items() if k.startswith(("gi.", "ci.", "mig_"))}


def test_dynamic_layout_then_restore_touches_only_the_jobs_gpu(node):
    n = node()
    before = n.gpus()
    ok, fault, msg, env = n.run('out(G.setup_mig([5], M.Layout.of(True, {"3g.40gb": 2})))')
    uuids = env["CUDA_VISIBLE_DEVICES"].split(",")
    assert ok and len(uuids) == 2 and all(MIG_UUID.fullmatch(u) for u in uuids)
    after = n.gpus()
    assert after[5]["mig_current"] == "1" and sorted(v for k, v in after[5].items() if k.startswith("ci.")) == \
        sorted(f"2:{u}" for u in uuids)  # CI profile 2 = NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE
    assert [g for i, g in enumerate(after) if i != 5] == [g for i, g in enumerate(before) if i != 5]
    assert n.run("out(G.mig_uuids([5]))") == uuids
    ok, _, msg, _ = n.run("out(G.restore_mig([5], M.Layout(False)))")
    assert ok and msg == "restored MIG disabled on GPU 5"
    assert _mig_keys(n.gpus()[5]) == _mig_keys(before[5])
    assert n.run("out(G.restore_mig([5], M.Layout(False)))")[:3] == [True, "", ""]  # epilog run twice


def test_static_layout_drift_is_restored(node):
    n = node()
    declared = 'M.Layout.of(True, {"1g.10gb": 3, "2g.20gb": 2})'
    assert n.run(f"out(G.restore_mig([0, 1], {declared}))")[0]
    decl_state = [_mig_keys(g) for g in n.gpus()[:2]]
    assert n.run('out(G.setup_mig([1], M.Layout.of(True, {"7g.80gb": 1})))')[0]  # a job changed GPU 1
    drifted = n.run(f"""
s, geo = G.read_mig([0, 1])
out(list(M.drifted(s, {declared}, geo, [0, 1])))""")
    assert drifted == [1]
    ok, _, msg, _ = n.run(f"out(G.restore_mig([0, 1], {declared}))")
    assert ok and msg.endswith("on GPU 1")
    states = n.run("""
s, _ = G.read_mig([0, 1])
out({i: sorted([g.profile, g.start, list(g.cis)] for g in st.instances) for i, st in s.items()})""")
    for rows in states.values():  # the declared instances, each with one full compute instance
        assert sorted((p, cis) for p, _, cis in rows) == [("1g.10gb", [1])] * 3 + [("2g.20gb", [2])] * 2
    assert states["0"] == states["1"]
    assert _mig_keys(n.gpus()[0]) == decl_state[0]  # GPU 0 was never touched again


def test_gpu_busy_on_enable_is_the_jobs_failure_and_leaves_nothing_pending(node):
    n = node()
    ok, fault, msg, env = n.run('out(G.setup_mig([3], M.Layout.of(True, {"3g.40gb": 1})))',
                                SLURM_GPU_NVML_STANDIN_FAIL="gpu_busy")
    assert (ok, fault, env) == (False, "job", {}) and "GPU busy" in msg
    g = n.gpus()[3]
    assert (g["mig_current"], g["mig_pending"]) == ("0", "0")


@pytest.mark.parametrize(("layout", "why"), [
    ('{"2g.10gb": 1}', "not supported by this GPU"),  # unknown to the GPU
    ('{"1g.20gb": 4, "1g.10gb": 1}', "does not fit"),  # no capacity
    ('{"3g.40gb": 3}', "allows 2"),
])
def test_unknown_profile_or_no_capacity_changes_nothing(node, layout, why):
    n = node()
    before = n.path.read_text()
    ok, fault, msg, _ = n.run(f"out(G.setup_mig([2, 4], M.Layout.of(True, {layout})))")
    assert (ok, fault) == (False, "job") and why in msg
    assert n.path.read_text() == before


def test_a_gpu_instance_without_its_compute_instance_is_repaired(node):
    n = node()
    n.run('out(G.setup_mig([6], M.Layout.of(True, {"3g.40gb": 2})))')
    text = n.path.read_text()
    n.path.write_text("\n".join(line for line in text.splitlines() if not line.startswith("gpu.6.ci.1.")) + "\n")
    assert len(n.run("out(G.mig_uuids([6]))")) == 1
    ok, _, msg, _ = n.run('out(G.restore_mig([6], M.Layout.of(True, {"3g.40gb": 2})))')
    assert ok and len(n.run("out(G.mig_uuids([6]))")) == 2


def test_driver_missing_or_no_permission_is_a_node_fault_not_a_crash(node):
    n = node()
    for switch in ("driver_not_loaded", "no_permission"):
        ok, fault, msg, _ = n.run('out(G.setup_mig([1], M.Layout.of(True, {"1g.10gb": 1})))',
                                  SLURM_GPU_NVML_STANDIN_FAIL=switch)
        assert (ok, fault) == (False, "node") and msg, switch
    assert _mig_keys(n.gpus()[1])["mig_current"] == "0"


def test_a_hung_nvml_call_is_bounded(node):
    n = node()
    t0 = time.monotonic()
    ok, fault, msg, _ = n.run('out(G.restore_mig([1], M.Layout.of(True, {"1g.10gb": 1}), timeout_s=1.5))',
                              timeout=30, SLURM_GPU_NVML_STANDIN_HANG="nvmlDeviceSetMigMode")
    assert (ok, fault) == (False, "node") and "did not answer within 1.5s" in msg
    assert time.monotonic() - t0 < 15
