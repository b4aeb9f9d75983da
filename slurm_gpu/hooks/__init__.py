# SPDX-License-Identifier: Apache-2.0
"""Prolog/Epilog/TaskProlog logic (MIG, MPS, GPU health, job stats): read env -> pure plan -> act through
adapters -> log; never fail a node for our own faults. Not built yet (the hooks issue)."""
