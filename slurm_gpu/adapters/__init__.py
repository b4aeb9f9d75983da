# SPDX-License-Identifier: Apache-2.0
"""Adapters: the edges to outside systems (Slurm's clients, NVML, sysfs, files). Core modules never import these.

Owns: the one file-safety adapter (``fs``) and per-user cache (``cache``, ``policy_cache``), the one Slurm
runner and client (``slurm/``), NVML and the node's GPUs (``nvml``, ``gpu_node``, ``gpu_config``),
``sysfs``, ``affinity`` and checkpoint ``markers``.
May import: the ground floor (GROUND in tests/test_layers.py), the pure packages (topology, checkpoint,
sharing, slurm, policy, ports, placement, render, emit) and the node hooks' pure records (node); never a
feature's flow (submit, cluster, sim, cli).
"""
