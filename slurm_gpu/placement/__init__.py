# SPDX-License-Identifier: Apache-2.0
"""Placement: the binding plan, locality checks and per-worker pinning (pure).

Owns: the placement plan (``plan``, ``per_gpu``: ordered step tables), its records (``layout``:
NodeLayout, BindingPlan), the locality rule against gres.conf (``locality``), per-worker CPU masks
(``pinning``) and ``slurm-gpu-pin`` (``pin_main``, the one edge).
May import: the ground floor (GROUND in tests/test_layers.py), topology, slurm and policy (pin_main also the
adapters).
"""
