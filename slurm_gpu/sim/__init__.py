# SPDX-License-Identifier: Apache-2.0
"""The policy simulator: replays a job trace through the site policy and a model of Slurm's scheduler,
reusing the classifier and slurm_gpu.slurm.records. Not built yet (the simulator issue)."""
