# SPDX-License-Identifier: Apache-2.0
"""Where gpusub's Jinja2 templates live: a probe of the disk, so it sits here and not in the renderer."""

from __future__ import annotations

import os
import sys

from slurm_gpu.render.script import SOURCE_TEMPLATE_DIR, TEMPLATE_NAME


def default_template_dir() -> str:
    """``templates/`` beside the package (source tree) or under ``<prefix>/share/slurm-gpu`` (installed)."""
    installed = os.path.join(sys.prefix, "share", "slurm-gpu", "templates")
    return SOURCE_TEMPLATE_DIR if os.path.isfile(os.path.join(SOURCE_TEMPLATE_DIR, TEMPLATE_NAME)) else installed
