# SPDX-License-Identifier: Apache-2.0
"""Re-export of :mod:`slurm_gpu.adapters.slurm.inventory` for its importers outside the adapter
(cli/policy.py, tests/policy/test_units.py); new code imports the new place."""

from slurm_gpu.adapters.slurm.inventory import LiveInventory, live_inventory, parse_gres_types, parse_partitions

__all__ = ["LiveInventory", "live_inventory", "parse_gres_types", "parse_partitions"]
