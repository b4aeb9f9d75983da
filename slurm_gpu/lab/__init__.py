# SPDX-License-Identifier: Apache-2.0
"""The local Slurm lab: a real Slurm (Debian packages) on one machine with emulated GPU nodes.

Modules: :mod:`.spec` (the plain-data description, built from policy + topology), :mod:`.config`
(pure: spec -> config file text), :mod:`.install` (apt), :mod:`.procs` (pidfiles, start/stop),
:mod:`.daemons` (munge, MariaDB, slurmdbd, slurmctld, slurmd, fake GPUs), :mod:`.control`
(up/down/status/env), :mod:`.clients` (timeout-wrapped Slurm client calls), :mod:`.demo`, :mod:`.burst`
(a burst of submissions from concurrent lab-user submitters, every job accounted for).

May import: the ground floor (GROUND in tests/test_layers.py), the pure packages, the adapters, and node and
cluster (the lab installs the hooks).
"""
