# SPDX-License-Identifier: Apache-2.0
"""Rendering gpusub's batch script from templates/ (pure: data in, text out)."""
