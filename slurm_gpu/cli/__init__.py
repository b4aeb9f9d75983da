# SPDX-License-Identifier: Apache-2.0
"""Command-line entry points. Each verb lives in its own module and is imported only when used.

Owns: one thin file per verb (argument parsing with click, output, exit codes); gpusub's submit path
never imports click.
May import: everything below it: the ground floor (GROUND in tests/test_layers.py), the pure packages,
adapters, and the features (node, cluster, sim, submit, lab).
"""
