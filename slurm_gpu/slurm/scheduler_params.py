# SPDX-License-Identifier: Apache-2.0
"""The lab's scheduler parameters, in one table (issues 14 and 26).

``slurm-gpu lab up`` writes its SchedulerParameters line into the lab's slurm.conf
(slurm_gpu/lab/config.py), ``slurm-gpu simulate --replay-in-lab`` writes it again when a lab's line
differs (and reconfigures that lab), and the simulator reads the line back
(``slurm_gpu.sim.validate.params_from_conf``): real Slurm and the model run on the same values.
Every value is named, also where it is Slurm's default, so that another release's default cannot slip in.
"""

from __future__ import annotations

# (Slurm name, value, what the simulator does with it.)
LAB_SCHEDULER_PARAMETERS: tuple[tuple[str, str, str], ...] = (
    ("sched_interval", "5", "sched_interval_s: the whole queue at the first event after each 5 s"),
    ("bf_interval", "5", "bf_interval_s: a backfill pass every 5 s (from slurmctld's own phase)"),
    ("bf_window", "1440", "bf_window_s (minutes in slurm.conf)"),
    ("bf_max_job_test", "500", "bf_max_job_test"),
    ("default_queue_depth", "100", "default_queue_depth (an event's main pass tests that many, and one more)"),
    ("bf_resolution", "60", "bf_resolution_s: reservations on the 60 s wall-clock grid"),
)


def lab_scheduler_line() -> str:
    """The SchedulerParameters line of :data:`LAB_SCHEDULER_PARAMETERS`."""
    return "SchedulerParameters=" + ",".join(f"{k}={v}" for k, v, _what in LAB_SCHEDULER_PARAMETERS)
