# SPDX-License-Identifier: Apache-2.0
"""Slurm itself: per-version facts and the parsers of its records.

Owns: the one table of per-release facts (``release``), the parsers of Slurm's outputs (``records``: the
one job reader), job ids (``job_id``), the job_desc model of the job_submit plugin (``job_desc``) and the
sbatch front end (``sbatch/``: the option table, getopt, #SBATCH lines, parse, to_request). Pure.
May import: the ground floor (GROUND in tests/test_layers.py) and sharing.
"""
