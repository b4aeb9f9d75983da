# SPDX-License-Identifier: Apache-2.0
"""Command-line entry points. Each verb lives in its own module and is imported only when used."""
