# SPDX-License-Identifier: Apache-2.0
"""The application layer: joins the pure core to the adapters (I/O allowed here)."""
