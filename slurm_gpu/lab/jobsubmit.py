# SPDX-License-Identifier: Apache-2.0
"""The lab's job_submit.lua: its own policy copy compiled and installed beside slurm.conf, by the same
compiler and atomic installer as ``slurm-gpu policy compile`` (:mod:`slurm_gpu.emit.install_lua`)."""

from __future__ import annotations

import os

from slurm_gpu.emit.install_lua import SCRIPT_NAME, install_policy
from slurm_gpu.emit.install_lua import install_text as _install
from slurm_gpu.errors import PolicyError, SlurmGpuError

PASS_THROUGH = ("-- SPDX-License-Identifier: Apache-2.0\n"
                "-- slurm-gpu lab: a job_submit.lua that passes every job through unchanged (Slurm alone)\n"
                "function slurm_job_submit(job_desc, part_list, submit_uid) return slurm.SUCCESS end\n"
                "function slurm_job_modify(job_desc, job_rec, part_list, modify_uid) return slurm.SUCCESS end\n"
                "return slurm.SUCCESS\n")


def install_text(text: str, conf_dir: str) -> str:
    """Write ``text`` as ``conf_dir``/job_submit.lua (atomically, mtime bumped, unchanged text left
    alone). Returns the path."""
    dst = os.path.join(conf_dir, SCRIPT_NAME)
    _install(text, dst)
    return dst


def install_policy_script(policy_path: str, conf_dir: str) -> str:
    """Compile the policy at ``policy_path`` and install it as ``conf_dir``/job_submit.lua."""
    dst = os.path.join(conf_dir, SCRIPT_NAME)
    try:
        install_policy(policy_path, dst)
    except (OSError, PolicyError) as e:
        raise SlurmGpuError(f"cannot compile the lab policy {policy_path} into {SCRIPT_NAME}: {e}") from e
    return dst
