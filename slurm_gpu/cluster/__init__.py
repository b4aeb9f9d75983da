# SPDX-License-Identifier: Apache-2.0
"""The cluster view, job GPU efficiency and usage reports, built on slurm_gpu.slurm.records and the
adapters. Not built yet (the cluster view issue)."""
