# SPDX-License-Identifier: Apache-2.0
"""Pure per-job MPS planning: the share is checked against the policy; paths and environments."""

from __future__ import annotations

import pytest

from slurm_gpu.policy.model import Isolation
from slurm_gpu.sharing import mps as P

ISO = Isolation(mps_min_share_pct=10, mps_max_share_pct=50)


def test_plan_paths_and_environments():
    p = P.plan(4711, 25, ISO)
    assert (p.job_dir, p.pipe_dir, p.log_dir, p.state_file) == (
        "/run/slurm-gpu/mps/4711", "/run/slurm-gpu/mps/4711/pipe", "/run/slurm-gpu/mps/4711/log",
        "/run/slurm-gpu/mps/4711/state.json")
    assert P.task_env(p) == {"CUDA_MPS_PIPE_DIRECTORY": "/run/slurm-gpu/mps/4711/pipe",
                             "CUDA_MPS_LOG_DIRECTORY": "/run/slurm-gpu/mps/4711/log",
                             "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25"}
    assert P.daemon_env(p, ("GPU-a", "GPU-b"), "/usr/bin") == {
        "PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": "GPU-a,GPU-b",
        "CUDA_MPS_PIPE_DIRECTORY": "/run/slurm-gpu/mps/4711/pipe",
        "CUDA_MPS_LOG_DIRECTORY": "/run/slurm-gpu/mps/4711/log"}
    assert P.start_commands(p) == ("set_default_active_thread_percentage 25",)
    assert P.plan(1, 10, ISO, base="/var/run/x").job_dir == "/var/run/x/1"


@pytest.mark.parametrize("pct", [9, 51, 0, 100, -1, True, 25.0, "25"])
def test_share_outside_the_policy_is_refused(pct):
    with pytest.raises(P.MpsError, match="outside the allowed 10-50%"):
        P.plan(7, pct, ISO)


@pytest.mark.parametrize(("job_id", "base"), [
    (0, P.DEFAULT_BASE), (-3, P.DEFAULT_BASE), (2 ** 32, P.DEFAULT_BASE), ("7", P.DEFAULT_BASE), (True, P.DEFAULT_BASE),
    (7, "run/mps"), (7, "/run/../etc"), (7, "/"), (7, "/run//mps"),
])
def test_bad_job_id_or_base_is_refused(job_id, base):
    with pytest.raises(P.MpsError):
        P.plan(job_id, 25, ISO, base=base)
