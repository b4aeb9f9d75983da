# SPDX-License-Identifier: Apache-2.0
"""The policy simulator's pure core: replays a job trace through the site policy (the classifier itself)
and a model of Slurm's scheduler (docs/simulate.md). ``engine.simulate(trace, policy, params)``."""
