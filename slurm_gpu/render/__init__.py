# SPDX-License-Identifier: Apache-2.0
"""Rendering gpusub's batch script (pure: data in, text out).

Owns: the one renderer (``script``: typed Submission, Decision, BindingPlan, SlurmSpelling and payload
in, RenderedScript out; ``shell``: the script's bash, written in plain Python from typed parts, no
template engine; docs/architecture.md "The batch script") and the checkpoint protocol's script settings
(``checkpoint``).
May import: the ground floor (GROUND in tests/test_layers.py), checkpoint, slurm, placement and policy.
"""
