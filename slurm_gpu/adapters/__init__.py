# SPDX-License-Identifier: Apache-2.0
"""Adapters: the edges (Slurm CLI, NVML, sysfs, files). Core modules never import these."""
