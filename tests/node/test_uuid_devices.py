# SPDX-License-Identifier: Apache-2.0
"""CUDA_VISIBLE_DEVICES with GPU UUIDs (Slurm 25.11+ Prolog/Epilog, 26.05 gres.conf Flags=env_uuid), read by
the hooks (node/model.py: job_from_env, map_gpus over NvmlNode.devices()), the pinning (placement/pinning.py:
gpus_from_env) and the jobs' GPU stats (node/stats.py records the GPU's index and UUID), over the stand-in
libnvidia-ml.so.1 with the real nvidia-ml-py (tests/nvml_standin), each run in a fresh process.

slurm_gpu/slurm/release.py (DEVICE_ENV) says which release sets what: from 25.11 the Prolog/Epilog get
``CUDA_VISIBLE_DEVICES=GPU-...`` while ``SLURM_JOB_GPUS`` stays the index list; with 26.05's ``env_uuid`` the
job's own environment holds UUIDs too. The expected indices are written here from the fixture
(tests/nvml_standin/fixtures/h100-8gpu.json: GPU i has UUID GPU-0000000i-0000-0000-0000-00000000000i and bus
id 00000000:<53,64,75,86,97,A8,B9,CA>:00.0), never read back from the library.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import missing

STANDIN = Path(__file__).resolve().parents[1] / "nvml_standin"


def _uuid(i: int) -> str:
    return f"GPU-0000000{i}-0000-0000-0000-00000000000{i}"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"standin_{name}_for_uuid", STANDIN / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build, state = _load("build"), _load("state")

CODE = """
import json, sys
from slurm_gpu.adapters.gpu_node import NvmlNode
from slurm_gpu.node.model import job_from_env, map_gpus
from slurm_gpu.placement.pinning import Locality, gpus_from_env
env = json.loads(sys.argv[1])
node = NvmlNode()
devices = node.devices()
job = job_from_env(env)
gpus, missing = map_gpus(job.gpu_tokens, devices, "index")
loc = Locality(gpu_cpus={}, cpu_core={}, cpu_numa={}, gpu_socket={}, gpu_uuid={d.uuid: d.index for d in devices})
pins = gpus_from_env(env, loc)
node.close()
print(json.dumps({"tokens": list(job.gpu_tokens), "gpus": [[g.slurm_id, g.index, g.bus_id] for g in gpus],
                  "missing": missing, "problems": list(job.problems), "pins": pins}))
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if build.compiler() is None:
        missing("no C compiler (cc/gcc): the stand-in libnvidia-ml.so.1 cannot be built here")
    lib = build.build()
    path = tmp_path_factory.mktemp("uuid") / "node.state"
    state.write(path, state.load_fixture("h100-8gpu"))

    def go(env: dict[str, str]) -> dict:
        full = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_GPU_NVML_STANDIN", "SLURM_", "CUDA_"))}
        full.update(LD_LIBRARY_PATH=str(lib), SLURM_GPU_NVML_STANDIN=str(path), PYTHONWARNINGS="error")
        r = subprocess.run([sys.executable, "-c", CODE, json.dumps({"SLURM_JOB_ID": "41", **env})], env=full,
                           capture_output=True, text=True, timeout=60, check=False)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout.strip().splitlines()[-1])

    return go


def test_prolog_of_2511_uuids_with_job_gpus(run) -> None:
    """25.11+ Prolog/Epilog: CUDA_VISIBLE_DEVICES holds UUIDs, SLURM_JOB_GPUS the indices: the indices win."""
    got = run({"SLURM_JOB_GPUS": "2,3", "CUDA_VISIBLE_DEVICES": f"{_uuid(2)},{_uuid(3)}"})
    assert got["tokens"] == ["2", "3"] and got["missing"] == [] and got["problems"] == []
    assert got["gpus"] == [["2", 2, "00000000:75:00.0"], ["3", 3, "00000000:86:00.0"]]


def test_uuids_alone_are_found_by_uuid(run) -> None:
    """env_uuid without SLURM_JOB_GPUS (a hook run by hand, a site's wrapper): each UUID is its GPU."""
    got = run({"CUDA_VISIBLE_DEVICES": f"{_uuid(5)},{_uuid(1)}"})
    assert got["tokens"] == [_uuid(5), _uuid(1)] and got["missing"] == []
    assert got["gpus"] == [[_uuid(5), 5, "00000000:A8:00.0"], [_uuid(1), 1, "00000000:64:00.0"]]
    assert got["pins"] == [[_uuid(5), 5], [_uuid(1), 1]]  # the pinning looks the UUIDs up as well


def test_pinning_maps_step_gpus_onto_uuid_entries(run) -> None:
    """A 26.05 env_uuid step: SLURM_STEP_GPUS gives the ids, CUDA_VISIBLE_DEVICES the UUIDs to export."""
    got = run({"SLURM_STEP_GPUS": "6,7", "SLURM_JOB_GPUS": "6,7", "CUDA_VISIBLE_DEVICES": f"{_uuid(6)},{_uuid(7)}"})
    assert got["pins"] == [[_uuid(6), 6], [_uuid(7), 7]]
    assert [g[1] for g in got["gpus"]] == [6, 7]


def test_an_unknown_uuid_is_missing_not_a_crash(run) -> None:
    other = "GPU-0000000f-0000-0000-0000-00000000000f"
    got = run({"CUDA_VISIBLE_DEVICES": f"{other},{_uuid(0)}"})
    assert got["missing"] == [other] and got["gpus"] == [[_uuid(0), 0, "00000000:53:00.0"]]
    assert got["pins"] == [[other, None], [_uuid(0), 0]]


def test_mig_uuids_of_both_spellings_are_tokens() -> None:
    """MIG UUIDs: R470+ drivers print ``MIG-<uuid>``, older ones ``MIG-GPU-<uuid>/GI/CI``; both are ids."""
    from slurm_gpu.node.model import gpu_tokens

    new, old = "MIG-1a2b3c4d-0000-5555-8888-0123456789ab", f"MIG-{_uuid(3)}/7/0"
    assert gpu_tokens(f"{new},{old}") == ((new, old), [])
    assert gpu_tokens("MIG-x/../../etc") == ((), ["GPU id 'MIG-x/../../etc' not understood; skipped"])
