# SPDX-License-Identifier: Apache-2.0
"""Rendering gpusub's batch script from templates/ (pure: data in, text out).

Owns: the one Jinja2 renderer on its documented API (``script``: typed Submission, Decision, BindingPlan,
SlurmSpelling and payload in, RenderedScript out) and the checkpoint protocol's script settings
(``checkpoint``).
May import: the ground floor (GROUND in tests/test_layers.py), checkpoint, slurm, placement and policy.
"""
