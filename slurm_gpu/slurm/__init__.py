# SPDX-License-Identifier: Apache-2.0
"""Slurm itself: per-version facts and the parsers of its records."""
