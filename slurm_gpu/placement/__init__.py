# SPDX-License-Identifier: Apache-2.0
"""Placement: the binding plan, locality checks and per-worker pinning (pure)."""
